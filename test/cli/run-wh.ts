import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";

/** The repository root: bin/wh.cjs and fixtures/ live here. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BIN = join(ROOT, "bin", "wh.cjs");
export const FIXTURES = join(ROOT, "fixtures");

export interface RunOptions {
  /** Written to standard input, which is then closed; without it stdin is closed at once. */
  input?: string | Buffer;
  /** Added to the clean environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Default: a fresh empty temporary directory, so no stray config file is found. */
  cwd?: string;
  /** Leave stdin open (after writing `input`) for the test to write to and end through `child.stdin`. */
  keepStdinOpen?: boolean;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const tempDirs: string[] = [];

/**
 * A fresh temporary directory holding only a package.json without a `wh` key: cosmiconfig's
 * project search stops there, so a config file in /tmp or above can never leak into a test.
 */
export async function makeTempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-cli-"));
  tempDirs.push(dir);
  await writeFile(join(dir, "package.json"), '{ "name": "wh-cli-test", "private": true }\n');
  return dir;
}

/** Removes every directory makeTempDir() made; call it from afterAll. */
export async function removeTempDirs(): Promise<void> {
  const dirs = tempDirs.splice(0);
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}

/** The parent's environment without anything that would change wh's behaviour, plus NO_COLOR. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name.startsWith("WH_") || name === "FORCE_COLOR" || name === "CI" || name === "DEBUG" || name === "NODE_OPTIONS") delete env[name];
  }
  env.NO_COLOR = "1";
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** A running `node bin/wh.cjs …` whose output is collected as it arrives. */
export interface WhProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with stdout once it satisfies the predicate (checked on every chunk); rejects if wh exits first. */
  waitForStdout(predicate: (stdout: string) => boolean): Promise<string>;
  /** The same for stderr. */
  waitForStderr(predicate: (stderr: string) => boolean): Promise<string>;
  /** Resolves when the process has exited, with everything it printed. */
  exited: Promise<RunResult>;
}

/** Starts `node bin/wh.cjs ...args` without waiting for it; for long-running commands like listen. */
export async function startWh(args: readonly string[], options: RunOptions = {}): Promise<WhProcess> {
  return spawnWh(args, { ...options, cwd: options.cwd ?? (await makeTempDir()) });
}

/** startWh in a given directory, synchronously: the process exists when this returns. */
export function spawnWh(args: readonly string[], options: RunOptions & { cwd: string }): WhProcess {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: cleanEnv(options.env), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    stdout += chunk;
    for (const listener of [...listeners]) listener();
  });
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
    for (const listener of [...listeners]) listener();
  });
  child.stdin.on("error", () => {
    // wh may exit before reading its input (a usage error): that is not the test's failure.
  });
  if (options.keepStdinOpen === true) {
    if (options.input !== undefined) child.stdin.write(options.input);
  } else if (options.input === undefined) child.stdin.end();
  else child.stdin.end(options.input);
  let closed = false;
  const waitFor = (read: () => string, predicate: (text: string) => boolean): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const check = (): void => {
        if (predicate(read())) {
          listeners.delete(check);
          resolve(read());
        } else if (closed) {
          listeners.delete(check);
          reject(new Error(`wh exited before the expected output.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        }
      };
      listeners.add(check);
      check();
    });
  const exited = (async (): Promise<RunResult> => {
    const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
    closed = true;
    for (const listener of [...listeners]) listener();
    return { code, signal, stdout, stderr };
  })();
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout: (predicate) => waitFor(() => stdout, predicate),
    waitForStderr: (predicate) => waitFor(() => stderr, predicate),
  };
}

/**
 * For a test file whose tests start long-running wh processes: call it once at the top; it
 * returns `keep`, which registers a process to be killed (SIGKILL) after the test if it still runs.
 */
export function killedAfterEach(): (wh: WhProcess) => WhProcess {
  const running: WhProcess[] = [];
  afterEach(async () => {
    for (const wh of running.splice(0)) {
      if (wh.child.exitCode === null && wh.child.signalCode === null) wh.child.kill("SIGKILL");
      await wh.exited;
    }
  });
  return (wh) => {
    running.push(wh);
    return wh;
  };
}

/** Runs `node bin/wh.cjs ...args` to completion. */
export async function run(args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const wh = await startWh(args, options);
  return wh.exited;
}

/** The X-Signature a receiver expects: lowercase hex HMAC-SHA1 of the raw bytes. */
export function hmacHex(secret: string, body: string | Buffer): string {
  return createHmac("sha1", secret).update(body).digest("hex");
}

/** Non-empty stdout lines. */
export function lines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim() !== "");
}

/** Signs of a stack trace or an internal error in wh's output. */
export const STACK_TRACE = /^\s+at .+\(?.*:\d+:\d+\)?$|internal error|please report/m;
