import { Analytics } from "@segment/analytics-node";
import { afterAll, expect } from "vitest";
import type { RecordedRequest } from "../../helpers/recording-server.js";
import { inProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, type Launch, type RunOptions, type WhProcess } from "../../helpers/run-wh.js";

export const SECRET = "serve-test-secret";

export interface ServeProcess extends WhProcess {
  /** The tracking API's base URL, e.g. http://127.0.0.1:40123. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts `wh serve --port 0 --json …` in `cwd` and waits for its `listening` record: in-process
 * unless `launch` is spawnWh.
 */
export async function startServe(args: readonly string[], options: RunOptions & { cwd: string }, launch: Launch = inProcess): Promise<ServeProcess> {
  const wh = launch(["--json", "serve", "--port", "0", ...args], { ...options, env: { WH_SHARED_SECRET: SECRET, ...options.env } });
  const stdout = await wh.waitForStdout((text) => text.includes('"listening"'));
  const record = lines(stdout)
    .map((line) => JSON.parse(line) as { listening?: string })
    .find((line) => line.listening !== undefined);
  return {
    ...wh,
    url: record?.listening as string,
    async stop() {
      if (wh.child.exitCode === null) wh.child.kill("SIGTERM");
      await wh.exited;
    },
  };
}

/**
 * For a test file whose tests start `wh serve`: call it once at the top; it returns
 * `serve(args, cwd?)` (a fresh directory unless given), and every process it started is stopped
 * after the file's tests.
 */
export function servedInTempDirs(launch: Launch = inProcess): (args: readonly string[], cwd?: string) => Promise<ServeProcess> {
  const running: ServeProcess[] = [];
  afterAll(async () => {
    await Promise.all(running.map((serve) => serve.stop()));
    await removeTempDirs();
  });
  return async (args, cwd) => {
    const wh = await startServe(args, { cwd: cwd ?? (await makeTempDir()) }, launch);
    running.push(wh);
    return wh;
  };
}

/** A real Segment SDK pointed at wh serve; flushes every `flushAt` events. */
export function sdk(url: string, writeKey = "wk-test", flushAt = 15): Analytics {
  return new Analytics({ writeKey, host: url, flushAt, flushInterval: 50, maxRetries: 3 });
}

/** The JSON bodies the receiver got, each checked to be signed with SECRET over its exact bytes. */
export function signedBodies(requests: readonly RecordedRequest[], secret = SECRET): Record<string, unknown>[] {
  return requests.map((request) => {
    expect(request.headers["x-signature"]).toBe(hmacHex(secret, request.body));
    return JSON.parse(request.body.toString("utf8")) as Record<string, unknown>;
  });
}

/**
 * How long eventually() waits before it names what never came: far past what any wait was measured
 * to take on a busy machine, and within the test's budget (vitest.config.ts). A net for a hang,
 * not a verdict on the machine's speed.
 */
const NET_MS = 120_000;

/** Polls until `check` returns true (the forwarder delivers asynchronously); `context` adds what the process said to a timeout. */
export async function eventually(check: () => boolean, what = "the condition", context?: () => string): Promise<void> {
  const deadline = Date.now() + NET_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${context === undefined ? "" : `\n${context()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** POSTs to wh serve as a hand-made client would. */
export async function post(
  url: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = { "content-type": "application/json" },
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${url}${path}`, { method: "POST", body: typeof body === "string" ? body : new Uint8Array(body), headers });
  const text = await response.text();
  return { status: response.status, json: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>), headers: response.headers };
}

export const basic = (writeKey: string): string => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
