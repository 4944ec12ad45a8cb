import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sendLikeSegment } from "../helpers/actions-webhook-oracle.js";
import { runInProcess } from "../helpers/in-process.js";
import { closedAfterEach, type RecordedRequest, type Reply } from "../helpers/recording-server.js";
import { SECRET } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "./run-wh.js";

// Actions mode held to a capture of Segment's own Webhooks (Actions) destination, run here by
// actions-core's createTestIntegration against real servers (test/helpers/actions-webhook-oracle.ts).

const server = closedAfterEach();
afterAll(removeTempDirs);

const EVENT = { type: "track", userId: "u1", event: "Order Completed", messageId: "m-oracle", properties: { total: 99.5 } };

/** wh replay --mode actions of one line to `url`, signed with SECRET. */
async function replayActions(line: string, url: string, extra: readonly string[] = []) {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), `${line}\n`);
  return runInProcess(["replay", "events.ndjson", "--url", url, "--mode", "actions", ...extra], { cwd: dir, env: { WH_SHARED_SECRET: SECRET } });
}

/** Segment's webhook sends EVENT to a fresh recording server: its one request is the capture. */
async function captureOfSegment(replies?: Reply[] | ((request: RecordedRequest, index: number) => Reply)): Promise<RecordedRequest[]> {
  const receiver = await server(replies === undefined ? {} : { replies });
  await sendLikeSegment(receiver.url, EVENT, SECRET);
  return receiver.requests;
}

describe("actions mode against a capture of Segment's own webhook", () => {
  it("sends the captured event's very bytes and X-Signature: no integrations added to an event that had none", async () => {
    const [capture] = await captureOfSegment();
    const held = capture?.body.toString("utf8") ?? "";
    expect(JSON.parse(held)).not.toHaveProperty("integrations");
    const receiver = await server();

    const result = await replayActions(held, receiver.url);

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests[0]?.body.toString("utf8")).toBe(held);
    expect(receiver.requests[0]?.headers["x-signature"]).toBe(capture?.headers["x-signature"]);
  });

  it("says User-Agent: Segment (Actions), as actions-core's request client does", async () => {
    const [capture] = await captureOfSegment();
    const receiver = await server();

    const result = await replayActions(JSON.stringify(EVENT), receiver.url);

    expect(result.code, result.stderr).toBe(0);
    expect(capture?.headers["user-agent"]).toBe("Segment (Actions)");
    expect(receiver.requests[0]?.headers["user-agent"]).toBe(capture?.headers["user-agent"]);
    const dryRun = await replayActions(JSON.stringify(EVENT), receiver.url, ["--dry-run"]);
    expect(dryRun.stdout).toContain("User-Agent: Segment (Actions)");
  });
});
