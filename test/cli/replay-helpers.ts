import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { access, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RecordedRequest } from "../helpers/recording-server.js";

/** The repository root: bin/wh.js lives here. */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = join(ROOT, "bin", "wh.js");

/** The shared secret every replay test signs with; it must never show up in output or files. */
export const SECRET = "replay-test-secret-7f3a9c";

export interface ReplayResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ReplayProcess {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<ReplayResult>;
}

export interface SpawnOptions {
  cwd: string;
  /** Written to stdin, which is then closed; without it stdin is closed at once. */
  input?: string | Buffer;
  /** Leave stdin open for the test to write to (and end) through `child.stdin`. */
  keepStdinOpen?: boolean;
  env?: Record<string, string | undefined>;
}

const workDirs: string[] = [];

/**
 * A fresh temporary working directory with a package.json that has no `wh` key, so cosmiconfig
 * stops there and no config file above /tmp leaks into a test.
 */
export async function makeWorkDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-replay-"));
  workDirs.push(dir);
  await writeFile(join(dir, "package.json"), '{ "name": "wh-replay-test", "private": true }\n');
  return dir;
}

export async function removeWorkDirs(): Promise<void> {
  const dirs = workDirs.splice(0);
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}

function replayEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name.startsWith("WH_") || name === "FORCE_COLOR" || name === "CI" || name === "DEBUG" || name === "NODE_OPTIONS") delete env[name];
  }
  env.NO_COLOR = "1";
  env.WH_SHARED_SECRET = SECRET;
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Starts `node bin/wh.js ...args` and collects its output; the caller may signal `child`. */
export function startWh(args: readonly string[], options: SpawnOptions): ReplayProcess {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: replayEnv(options.env), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (stdout += chunk));
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  child.stdin.on("error", () => {
    // wh may exit before reading its input: not the test's failure.
  });
  if (options.keepStdinOpen === true) {
    if (options.input !== undefined) child.stdin.write(options.input);
  } else if (options.input === undefined) child.stdin.end();
  else child.stdin.end(options.input);
  const exited = (async (): Promise<ReplayResult> => {
    const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
    return { code, signal, stdout, stderr };
  })();
  return { child, exited };
}

/** Runs `node bin/wh.js ...args` to completion. */
export function runWh(args: readonly string[], options: SpawnOptions): Promise<ReplayResult> {
  return startWh(args, options).exited;
}

export function hmacHex(secret: string, body: string | Buffer): string {
  return createHmac("sha1", secret).update(body).digest("hex");
}

/** One Segment-spec track event as an NDJSON line (no newline). */
export function trackLine(userId: string, messageId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: "track", userId, event: "Replayed", messageId, properties: { n: messageId }, timestamp: "2026-11-21T09:30:08.276Z", ...extra });
}

/** `count` track events spread round-robin over `users` users, with messageIds m-00001 … */
export function manyEvents(count: number, users: number): { userId: string; messageId: string; line: string }[] {
  return Array.from({ length: count }, (_, index) => {
    const userId = `user-${index % users}`;
    const messageId = `m-${String(index + 1).padStart(5, "0")}`;
    return { userId, messageId, line: trackLine(userId, messageId) };
  });
}

/** The parsed JSON body of a recorded request. */
export function bodyOf(request: RecordedRequest): Record<string, unknown> {
  return JSON.parse(request.body.toString("utf8")) as Record<string, unknown>;
}

export function messageIdOf(request: RecordedRequest): string {
  return String(bodyOf(request).messageId);
}

/** How many times each messageId arrived. */
export function countByMessageId(requests: readonly RecordedRequest[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of requests) {
    const id = messageIdOf(request);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Every non-blank line of an NDJSON file, parsed. */
export async function readNdjson(path: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path, "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
