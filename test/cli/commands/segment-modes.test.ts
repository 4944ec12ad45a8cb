import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordedRequest } from "../../helpers/recording-server.js";
import { readNdjson, SECRET } from "./replay-helpers.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { FIXTURES, makeTempDir, removeTempDirs, type RunOptions } from "../../helpers/run-wh.js";

// Issue 10: real Segment events in, the classic and the Actions destination out, batches.
// In-process (runMain against src/).

const server = closedAfterEach();
afterAll(removeTempDirs);

const signed = (args: string[], options: RunOptions = {}) => runInProcess(args, { ...options, env: { WH_SHARED_SECRET: SECRET, ...options.env } });
const hmac = (text: string): string => createHmac("sha1", SECRET).update(text).digest("hex");
const EVENTS = readFileSync(join(FIXTURES, "segment-events.ndjson"), "utf8");

/** What Segment documents for receivers: parse the body, serialise it again, HMAC that; for a batch, its first event. */
function segmentVerifies(request: RecordedRequest): boolean {
  const parsed: unknown = JSON.parse(request.body.toString("utf8"));
  const signedPart = Array.isArray(parsed) ? JSON.stringify(parsed[0]) : JSON.stringify(parsed);
  return request.headers["x-signature"] === hmac(signedPart);
}

async function eventsDir(text = EVENTS): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), text);
  return dir;
}

const bodies = (requests: readonly RecordedRequest[]): Record<string, unknown>[] =>
  requests.flatMap((request) => {
    const parsed = JSON.parse(request.body.toString("utf8")) as Record<string, unknown> | Record<string, unknown>[];
    return Array.isArray(parsed) ? parsed : [parsed];
  });

describe("real Segment events (version 2, context, receivedAt, …)", () => {
  it("are accepted in classic mode and sent in the seed's shapes, verifiable the way Segment documents", async () => {
    const receiver = await server();
    const dir = await eventsDir();

    const result = await signed(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "1", "--verbose"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(7);
    for (const request of receiver.requests) expect(segmentVerifies(request)).toBe(true);
    const [identify, track, page, screen, group, alias, del] = bodies(receiver.requests);
    expect(identify).toMatchObject({
      version: 1,
      type: "identify",
      userId: "u-ada",
      traits: { email: "ada@example.com" },
      messageId: "ajs-next-1a2b3c",
      timestamp: "2026-11-21T09:30:08.227Z",
    });
    expect(track).toMatchObject({ version: 1, event: "Order Completed", properties: { total: 99.5 } });
    expect(page).toMatchObject({ version: 1, name: "Pricing", category: "Docs", properties: { path: "/pricing" } });
    expect(screen).toMatchObject({ version: 1, name: "Checkout", context: { device: { model: "iPhone15,2" } } });
    expect(group).toMatchObject({ version: 1, groupId: "acme", traits: { name: "Acme Inc" } });
    expect(alias).toMatchObject({ version: 1, "Previous ID": "anon-2", "User ID": "u-bob" });
    expect(del).toEqual({ type: "delete", userId: "u-carol", timestamp: "2026-11-21T09:36:00.000Z" });
    // Nothing dropped without a word: --verbose counts what the classic shape does not carry.
    expect(result.stdout).toMatch(/not carried by the classic shape \(use --mode actions to send whole events\): .*receivedAt \(7\)/);
  });

  it("lists in --dry-run the fields the classic shape does not carry", async () => {
    const dir = await eventsDir();
    const result = await signed(["replay", "events.ndjson", "--url", "http://127.0.0.1:9/", "--dry-run"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(
      "(not carried by the classic shape: originalTimestamp, receivedAt, sentAt, channel, projectId, _metadata; --mode actions sends the whole event)",
    );
  });

  it.each(["POST", "PUT", "PATCH"])("are sent whole in actions mode by %s, with what every Segment event has filled in, the delete skipped", async (method) => {
    const receiver = await server();
    const dir = await eventsDir(`${EVENTS}{"type":"track","userId":"u-new","event":"Bare"}\n`);

    const result = await signed(["replay", "events.ndjson", "--url", receiver.url, "--mode", "actions", "--method", method, "--concurrency", "1"], {
      cwd: dir,
    });

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests.map((request) => request.method)).toEqual(Array(7).fill(method));
    for (const request of receiver.requests) expect(segmentVerifies(request)).toBe(true);
    const sent = bodies(receiver.requests);
    const original = EVENTS.trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const [index, event] of original.filter((event) => event.type !== "delete").entries()) expect(sent[index]).toMatchObject(event);
    expect(sent[5]).toMatchObject({ type: "alias", previousId: "anon-2", userId: "u-bob" });
    expect(sent[6]).toEqual({
      type: "track",
      userId: "u-new",
      event: "Bare",
      messageId: expect.any(String),
      timestamp: expect.any(String),
      receivedAt: expect.any(String),
      context: {},
    });
  });

  it("refuses PUT and batches in classic mode", async () => {
    const dir = await eventsDir();
    expect((await signed(["replay", "events.ndjson", "--url", "http://127.0.0.1:9/", "--method", "PUT"], { cwd: dir })).stderr).toMatch(
      /--method PUT needs --mode actions/,
    );
    expect((await signed(["replay", "events.ndjson", "--url", "http://127.0.0.1:9/", "--batch-size", "10"], { cwd: dir })).code).toBe(2);
  });
});

/** `count` track events over `users` users, messageIds m-1 … */
const many = (count: number, users: number): string =>
  `${Array.from({ length: count }, (_, index) => JSON.stringify({ type: "track", userId: `user-${index % users}`, event: "E", messageId: `m-${index + 1}`, properties: { n: index + 1 } })).join("\n")}\n`;

describe("Actions batches", () => {
  it("keep each user's order across batches under concurrency, and sign each over its first event", async () => {
    // One user holds half the events: the heavy-tailed shape batching is for.
    const text = `${Array.from({ length: 400 }, (_, index) => JSON.stringify({ type: "track", userId: index % 2 === 0 ? "heavy" : `u${index % 13}`, event: "E", messageId: `m-${index + 1}` })).join("\n")}\n`;
    const receiver = await server({ replies: () => ({ status: 200, delayMs: Math.floor(Math.random() * 15) }) });
    const dir = await eventsDir(text);

    const result = await signed(["replay", "events.ndjson", "--url", receiver.url, "--mode", "actions", "--batch-size", "10", "--concurrency", "8"], {
      cwd: dir,
    });

    expect(result.code, result.stderr).toBe(0);
    for (const request of receiver.requests) expect(segmentVerifies(request)).toBe(true);
    expect(Math.max(...receiver.requests.map((request) => (JSON.parse(request.body.toString("utf8")) as unknown[]).length))).toBe(10);
    const arrived = bodies(receiver.requests);
    expect(arrived).toHaveLength(400);
    const byUser = new Map<string, number[]>();
    for (const event of arrived) byUser.set(String(event.userId), [...(byUser.get(String(event.userId)) ?? []), Number(String(event.messageId).slice(2))]);
    for (const [user, order] of byUser) expect(order, user).toEqual([...order].sort((a, b) => a - b));
  });

  it("dead-letters each event of a failed batch with its own line number", async () => {
    const receiver = await server({ replies: (request) => (request.body.includes('"m-7"') ? { status: 400, body: "bad batch" } : 200) });
    const dir = await eventsDir(many(20, 3));

    const result = await signed(["replay", "events.ndjson", "--url", receiver.url, "--mode", "actions", "--batch-size", "5", "--concurrency", "1"], {
      cwd: dir,
    });

    expect(result.code).toBe(1);
    const records = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(records.map((record) => record.line)).toEqual([6, 7, 8, 9, 10]);
    expect(records[0]).toMatchObject({ outcome: "failed", reason: expect.stringMatching(/in a batch of 5: .*HTTP 400: bad batch/) });
  });
});

describe("verify and listen understand batches", () => {
  const batch = '[{"type":"track","userId":"u1","event":"A"},{"type":"track","userId":"u2","event":"B"}]';

  it("wh verify says a batch signed over its first event is valid, and what it does not cover", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "batch.json"), batch);
    const ok = await signed(["verify", "batch.json", "--signature", hmac('{"type":"track","userId":"u1","event":"A"}')], { cwd: dir });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe("valid: batch, first event signed, as Segment signs batches; the other events are not covered\n");
    const second = await signed(["verify", "batch.json", "--explain", "--signature", hmac('{"type":"track","userId":"u2","event":"B"}')], { cwd: dir });
    expect(second.code).toBe(1);
    expect(second.stdout).toMatch(/likely cause: this is a batch of 2 events and the signature is that of event 2: Segment signs a batch over its first event/);
  });

  it("wh listen shows a batch delivered by wh replay as verified, first event signed", async () => {
    const listen = await startInProcess(["listen", "--secret", SECRET]);
    const url = (await listen.waitForStderr((text) => /listening on http/.test(text))).match(/listening on (\S+)/)?.[1] as string;
    const dir = await eventsDir(many(4, 2));
    const result = await signed(["replay", "events.ndjson", "--url", url, "--mode", "actions", "--batch-size", "4"], { cwd: dir });
    const shown = await listen.waitForStdout((text) => /signature verified/.test(text));
    listen.child.kill("SIGINT");
    await listen.exited;
    expect(result.code, result.stderr).toBe(0);
    expect(shown).toContain("signature verified: batch, first event signed, as Segment signs batches; the other events are not covered");
  });
});

describe("wh ingest and the HTTP API's batch context", () => {
  it("merges a batch line's context into each message, the message's own keys winning", async () => {
    const receiver = await server();
    const dir = await makeTempDir();
    const line = {
      batch: [
        { type: "track", userId: "u1", event: "A", context: { locale: "fr-FR" } },
        { type: "identify", userId: "u2" },
      ],
      context: { ip: "203.0.113.9", locale: "en-US" },
    };
    await writeFile(join(dir, "events.ndjson"), `${JSON.stringify(line)}\n`);
    const result = await runInProcess(["ingest", "events.ndjson", "--endpoint", `http://127.0.0.1:${receiver.port}`, "--write-key", "wk"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const sent = receiver.requests.flatMap((request) => (JSON.parse(request.body.toString("utf8")) as { batch: Record<string, unknown>[] }).batch);
    expect(sent[0]?.context).toMatchObject({ ip: "203.0.113.9", locale: "fr-FR", library: { name: "wh" } });
    expect(sent[1]?.context).toMatchObject({ ip: "203.0.113.9", locale: "en-US" });
  });
});

describe("the mode per source", () => {
  it("takes mode, method and batchSize from the chosen source in the config", async () => {
    const receiver = await server();
    const dir = await eventsDir(many(4, 2));
    await writeFile(
      join(dir, ".whrc.json"),
      JSON.stringify({
        sources: {
          web: { webhooks: [{ url: receiver.url }], sharedSecret: SECRET, mode: "actions", method: "PATCH", batchSize: 2 },
          legacy: { webhooks: [{ url: receiver.url }] },
        },
      }),
    );
    const result = await runInProcess(["replay", "events.ndjson", "--source", "web", "--concurrency", "1"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests.map((request) => request.method)).toEqual(["PATCH", "PATCH"]);
    for (const request of receiver.requests) expect(segmentVerifies(request)).toBe(true);
    const invalid = await runInProcess(["config", "validate"], { cwd: dir });
    expect(invalid.code).toBe(0);
  });

  it("keeps a page's traits, as its properties, in classic mode", async () => {
    const receiver = await server();
    const dir = await eventsDir(
      `${JSON.stringify({ type: "page", userId: "u1", name: "Home", traits: { title: "Home", plan: "pro" }, properties: { path: "/" } })}\n`,
    );
    const result = await signed(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(bodies(receiver.requests)[0]?.properties).toEqual({ title: "Home", plan: "pro", path: "/" });
  });
});
