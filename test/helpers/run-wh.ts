import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import type { CliTimings } from "../../src/cli/wiring/io.js";
import type { Clock } from "../../src/core/clock.js";
import { watchOutput } from "./test-io.js";
import { staleBuild } from "../../scripts/stale-build.mjs";
import { tracked } from "./children.js";

/** The repository root: bin/wh.cjs and fixtures/ live here. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const FIXTURES = join(ROOT, "fixtures");
const BIN = join(ROOT, "bin", "wh.cjs");
let checkedBundle = false;

/**
 * bin/wh.cjs, once dist/ is known to be built from the source as it is: a test that spawns wh
 * runs dist/, and against a dist/ older than src/ (or scripts/, which bundles it) it would pass
 * or fail for code that is no longer there. It fails the test and says to build, rather than
 * building here: two test runs in one worktree would delete each other's dist/ mid-run, and
 * only the tests that spawn wh need it (the in-process ones run src/).
 */
export function builtBin(): string {
  if (checkedBundle) return BIN;
  const stale = staleBuild();
  if (stale !== undefined) throw new Error(`${stale}: run \`npm run build\` before the tests that spawn bin/wh.cjs`);
  checkedBundle = true;
  return BIN;
}

export interface RunOptions {
  /** Written to standard input, which is then closed; without it stdin is closed at once. */
  input?: string | Buffer;
  /** Added to the clean environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Default: a fresh empty temporary directory, so no stray config file is found. */
  cwd?: string;
  /** Leave stdin open (after writing `input`) for the test to write to and end through `child.stdin`. */
  keepStdinOpen?: boolean;
  /** In-process only: what stdout and stderr say they are (default: not terminals). */
  isTTY?: boolean;
  /** In-process only: the command's waits (default: test/helpers/test-io.ts's short ones). */
  timings?: Partial<CliTimings>;
  /** In-process only: the clock the command stamps and waits with (default: the real one). */
  clock?: Clock;
  /** In-process only: the messageIds it makes (default: random UUIDs). */
  newId?: () => string;
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

/** What a test may do to a running wh: the spawned child, or its in-process twin's. */
export interface WhChild {
  readonly stdin: Writable;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  /** In-process: the test's own process (a lock names it). */
  readonly pid?: number | undefined;
  kill(signal?: NodeJS.Signals): boolean;
}

/** A running wh (`node bin/wh.cjs …`, or runMain in-process) whose output is collected as it arrives. */
export interface WhProcess<Child extends WhChild = WhChild> {
  child: Child;
  stdout(): string;
  stderr(): string;
  /** Resolves with stdout once it satisfies the predicate (checked on every chunk); rejects if wh exits first. */
  waitForStdout(predicate: (stdout: string) => boolean): Promise<string>;
  /** The same for stderr. */
  waitForStderr(predicate: (stderr: string) => boolean): Promise<string>;
  /** Resolves when the process has exited, with everything it printed. */
  exited: Promise<RunResult>;
}

/** How a test starts wh in `cwd`: spawnWh, or inProcess (test/helpers/in-process.ts). */
export type Launch = (args: readonly string[], options: RunOptions & { cwd: string }) => WhProcess;

/** Starts `node bin/wh.cjs ...args` without waiting for it, in a fresh directory unless given one. */
async function startWh(args: readonly string[], options: RunOptions = {}): Promise<WhProcess<ChildProcessWithoutNullStreams>> {
  return spawnWh(args, { ...options, cwd: options.cwd ?? (await makeTempDir()) });
}

/** startWh in a given directory, synchronously: the process exists when this returns. */
export function spawnWh(args: readonly string[], options: RunOptions & { cwd: string }): WhProcess<ChildProcessWithoutNullStreams> {
  const child = spawn(process.execPath, [builtBin(), ...args], { cwd: options.cwd, env: cleanEnv(options.env), stdio: ["pipe", "pipe", "pipe"] });
  const wh = watchChild(child);
  if (options.keepStdinOpen === true) {
    if (options.input !== undefined) child.stdin.write(options.input);
  } else if (options.input === undefined) child.stdin.end();
  else child.stdin.end(options.input);
  return wh;
}

/** A spawned wh (or script(1) running it) whose output is collected as it arrives, until it has exited. */
export function watchChild(child: ChildProcessWithoutNullStreams): WhProcess<ChildProcessWithoutNullStreams> {
  tracked(child);
  const output = watchOutput();
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => output.add("stdout", chunk));
  child.stderr.on("data", (chunk: string) => output.add("stderr", chunk));
  child.stdin.on("error", () => {
    // wh may exit before reading its input (a usage error, or before a key is typed): not the test's failure.
  });
  const exited = (async (): Promise<RunResult> => {
    const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
    return output.close(code, signal);
  })();
  return { child, exited, ...output.reading };
}

/**
 * For a test file whose tests start long-running wh processes: call it once at the top; it
 * returns `keep`, which registers a process to be killed (SIGKILL) after the test if it still runs.
 */
export function killedAfterEach(): <P extends WhProcess>(wh: P) => P {
  const running: WhProcess[] = [];
  afterEach(async () => {
    for (const wh of running.splice(0)) {
      // In-process (its pid is this one's) a clean stop is all there is.
      if (wh.child.exitCode === null && wh.child.signalCode === null) wh.child.kill(wh.child.pid === process.pid ? "SIGTERM" : "SIGKILL");
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
