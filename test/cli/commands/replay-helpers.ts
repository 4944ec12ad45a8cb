import { access, readFile } from "node:fs/promises";
import type { RecordedRequest } from "../../helpers/recording-server.js";
import { inProcess } from "../../helpers/in-process.js";
import type { Launch, RunOptions, RunResult, WhProcess } from "../../helpers/run-wh.js";

/** The shared secret every replay test signs with; it must never show up in output or files. */
export const SECRET = "replay-test-secret-7f3a9c";

/**
 * `wh ...args` in `cwd`, signed with SECRET, started synchronously (a test may signal `child`):
 * in-process unless `launch` is spawnWh.
 */
export function spawnSigned(args: readonly string[], options: RunOptions & { cwd: string }): WhProcess;
export function spawnSigned<P extends WhProcess>(
  args: readonly string[],
  options: RunOptions & { cwd: string },
  launch: (args: readonly string[], options: RunOptions & { cwd: string }) => P,
): P;
export function spawnSigned(args: readonly string[], options: RunOptions & { cwd: string }, launch: Launch = inProcess): WhProcess {
  return launch(args, { ...options, env: { WH_SHARED_SECRET: SECRET, ...options.env } });
}

/** spawnSigned, run to completion. */
export function runSigned(args: readonly string[], options: RunOptions & { cwd: string }, launch: Launch = inProcess): Promise<RunResult> {
  return spawnSigned(args, options, launch).exited;
}

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
