import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { SECRET } from "./replay-helpers.js";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs, type RunOptions } from "../../helpers/run-wh.js";

// Actions mode as Segment's Webhooks (Actions) destination sends (segmentio/action-destinations:
// destinations/webhook, and actions-core's request client and errors).

const server = closedAfterEach();
afterAll(removeTempDirs);

const signed = (args: string[], options: RunOptions = {}) => runInProcess(args, { ...options, env: { WH_SHARED_SECRET: SECRET, ...options.env } });

async function replayLines(text: string, args: readonly string[]) {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), text);
  return signed(["--json", "replay", "events.ndjson", ...args], { cwd: dir });
}

const TRACK = JSON.stringify({ type: "track", userId: "u1", event: "E", messageId: "m-1" });

describe("actions mode, as Segment's Actions webhook sends", () => {
  it("waits 10 s for an answer, as actions-core's request client does: a receiver answering after 6 s gets the event once", async () => {
    const receiver = await server({ replies: [{ status: 200, delayMs: 6_000 }] });
    const result = await replayLines(`${TRACK}\n`, ["--url", receiver.url, "--mode", "actions"]);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });

  it("keeps --timeout when it is given", async () => {
    const receiver = await server({ replies: [{ status: 200, delayMs: 1_500 }, 200] });
    const result = await replayLines(`${TRACK}\n`, ["--url", receiver.url, "--mode", "actions", "--timeout", "500ms"]);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests.length).toBeGreaterThanOrEqual(2);
  });

  it("retries 423 and 505 as Segment's Actions destinations do; classic mode takes them as final", async () => {
    const actions = await server({ replies: [423, 505, 200] });
    const retried = await replayLines(`${TRACK}\n`, ["--url", actions.url, "--mode", "actions"]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(actions.requests).toHaveLength(3);
    const classic = await server({ replies: [423, 200] });
    const final = await replayLines(`${TRACK}\n`, ["--url", classic.url, "--max-attempts", "3"]);
    expect(final.code).toBe(1);
    expect(classic.requests).toHaveLength(1);
  });

  it("invents no sentAt or originalTimestamp and keeps each timestamp as the event has it, offset and all", async () => {
    const receiver = await server();
    const bare = { type: "track", userId: "u1", event: "Bare", messageId: "m-bare", timestamp: "2026-01-02T03:04:05+02:00" };
    const full = {
      type: "track",
      userId: "u1",
      event: "Full",
      messageId: "m-full",
      timestamp: "2026-01-02T03:04:05.120+0200",
      originalTimestamp: "2026-01-02T03:04:05.100+0200",
      sentAt: "2026-01-02T03:04:06+0200",
    };
    const result = await replayLines(`${JSON.stringify(bare)}\n${JSON.stringify(full)}\n`, ["--url", receiver.url, "--mode", "actions", "--concurrency", "1"]);
    expect(result.code, result.stderr).toBe(0);
    const [first, second] = receiver.requests.map((request) => JSON.parse(request.body.toString("utf8")) as Record<string, unknown>);
    expect(first).toEqual({ ...bare, receivedAt: expect.any(String), context: {} });
    expect(second).toMatchObject({ timestamp: full.timestamp, originalTimestamp: full.originalTimestamp, sentAt: full.sentAt });
  });

  it("never sends a delete: it is skipped, saying why, and the run succeeds", async () => {
    const receiver = await server();
    const result = await replayLines(`${JSON.stringify({ type: "delete", userId: "u1", messageId: "m-del" })}\n${TRACK}\n`, [
      "--url",
      receiver.url,
      "--mode",
      "actions",
      "--concurrency",
      "1",
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests.map((request) => (JSON.parse(request.body.toString("utf8")) as { type: string }).type)).toEqual(["track"]);
    expect(result.stdout).toContain("the Actions webhook never sends delete");
    const send = await signed(["send", "delete", "--user-id", "u1", "--url", receiver.url, "--mode", "actions"], { cwd: await makeTempDir() });
    expect(send.code, send.stderr).toBe(0);
    expect(send.stdout).toContain("skipped delete: the Actions webhook never sends delete; nothing was sent");
    expect(receiver.requests).toHaveLength(1);
  });
});
