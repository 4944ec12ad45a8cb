import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sendLikeSegment } from "./actions-webhook-oracle.js";
import { runInProcess } from "../../test/helpers/in-process.js";
import { closedAfterEach, type RecordedRequest, type Reply } from "../../test/helpers/recording-server.js";
import { SECRET } from "../../test/cli/commands/replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../test/helpers/run-wh.js";

// Actions mode held to a capture of Segment's own Webhooks (Actions) destination, run here by
// actions-core's createTestIntegration against real servers (actions-webhook-oracle.ts).

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

/** What a receiver saw of each request, in order. */
const seen = (requests: readonly RecordedRequest[]) =>
  requests.map(({ method, path, headers, body }) => ({
    method,
    path,
    body: body.toString("utf8"),
    signature: headers["x-signature"],
    authorization: headers.authorization,
  }));

/** A receiver whose /hook answers `status` to `location` (default /final), everything else 200. */
const redirecting = (status: number, location = "/final") =>
  server({ replies: (request) => (request.path === "/hook" ? { status, headers: { location } } : 200) });

describe("actions mode follows redirects as actions-core's request client does", () => {
  it.each([301, 302, 303, 307, 308])("%i: the same requests, methods and bytes as Segment's webhook sends", async (status) => {
    const segment = await redirecting(status);
    await sendLikeSegment(segment.url, EVENT, SECRET);
    const held = segment.requests[0]?.body.toString("utf8") ?? "";
    const receiver = await redirecting(status);

    const result = await replayActions(held, receiver.url);

    expect(result.code, result.stderr).toBe(0);
    expect(seen(receiver.requests)).toEqual(seen(segment.requests));
    expect(receiver.requests.map((request) => request.path)).toEqual(["/hook", "/final"]);
  });

  it("does not carry Authorization to another host, as Segment's webhook does not", async () => {
    const other = await server();
    const location = `http://localhost:${other.port}/final`;
    const segment = await redirecting(307, location);
    await sendLikeSegment(segment.url, EVENT, SECRET, { Authorization: "Bearer t0ken" });
    const receiver = await redirecting(307, location);

    const result = await replayActions(segment.requests[0]?.body.toString("utf8") ?? "", receiver.url, ["--header", "Authorization: Bearer t0ken"]);

    expect(result.code, result.stderr).toBe(0);
    expect(seen(receiver.requests)).toEqual(seen(segment.requests));
    expect(receiver.requests[0]?.headers.authorization).toBe("Bearer t0ken");
    const [bySegment, byWh] = other.requests;
    expect(seen([byWh as RecordedRequest])).toEqual(seen([bySegment as RecordedRequest]));
    expect(byWh?.headers.authorization).toBeUndefined();
  });

  it("gives up after 20 redirects, as node-fetch's follow limit does, without retrying", async () => {
    const segment = await redirecting(307, "/hook");
    await expect(sendLikeSegment(segment.url, EVENT, SECRET)).rejects.toThrow(/maximum redirect/);
    const receiver = await redirecting(307, "/hook");

    const result = await replayActions(JSON.stringify(EVENT), receiver.url);

    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(segment.requests.length);
    expect(result.stderr).toContain("more than 20 redirects");
  });

  it("classic mode still takes a 307 as final", async () => {
    const receiver = await redirecting(307);
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${JSON.stringify(EVENT)}\n`);

    const result = await runInProcess(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code).toBe(1);
    expect(receiver.requests.map((request) => request.path)).toEqual(["/hook"]);
  });
});
