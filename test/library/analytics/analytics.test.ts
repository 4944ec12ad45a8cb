import { afterEach, describe, expect, it, vi } from "vitest";
import { Analytics, type AliasFields, type GroupFields, type TrackFields } from "../../../src/library/analytics/analytics.js";
import { AnalyticsError, isDebugEnabled, type AnalyticsOptions } from "../../../src/library/analytics/analytics-options.js";
import type { BatchResult, QueuedMessage } from "../../../src/library/analytics/batch-sender.js";
import type { Clock } from "../../../src/core/clock.js";
import { USER_AGENT, VERSION } from "../../../src/version.js";
import { startRecordingServer, type RecordedRequest, type RecordingServer, type RecordingServerOptions } from "../../helpers/recording-server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const START_MS = Date.parse("2026-11-21T09:30:08.276Z");
const WRITE_KEY = "wk_test_Zq81xY";
const BASIC = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;

/** A clock that stands still until the test advances it; a sleep ends when its time comes or its signal aborts. */
class ManualClock implements Clock {
  nowMs = START_MS;
  readonly requested: number[] = [];
  private readonly pending = new Set<{ until: number; resolve: () => void }>();

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.requested.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const entry = {
        until: this.nowMs + ms,
        resolve: () => {
          this.pending.delete(entry);
          signal?.removeEventListener("abort", entry.resolve);
          resolve();
        },
      };
      this.pending.add(entry);
      signal?.addEventListener("abort", entry.resolve, { once: true });
    });
  }

  /** Sleeps not yet over. */
  get sleeping(): number {
    return this.pending.size;
  }

  async advance(ms: number): Promise<void> {
    this.nowMs += ms;
    for (const entry of [...this.pending]) if (entry.until <= this.nowMs) entry.resolve();
    await ticks();
  }
}

/** A clock whose sleeps end at once (moving time on), recording what was asked: retries without waiting. */
class InstantClock implements Clock {
  nowMs = START_MS;
  readonly requested: number[] = [];

  now(): number {
    return this.nowMs;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.requested.push(ms);
    if (!signal?.aborted) this.nowMs += ms;
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
async function ticks(count = 5): Promise<void> {
  for (let i = 0; i < count; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

interface Batch {
  batch: Array<Record<string, unknown>>;
  sentAt: string;
}

const parse = (request: RecordedRequest): Batch => JSON.parse(request.body.toString("utf8")) as Batch;
const idsOf = (request: RecordedRequest): string[] => parse(request).batch.map((message) => String(message.messageId));

let servers: RecordingServer[] = [];
let clients: Analytics[] = [];

async function server(options: RecordingServerOptions = {}): Promise<RecordingServer> {
  const started = await startRecordingServer(options);
  servers.push(started);
  return started;
}

const endpointOf = (receiver: RecordingServer): string => `http://127.0.0.1:${receiver.port}`;

function client(receiver: RecordingServer, options: Partial<AnalyticsOptions> = {}): Analytics {
  const created = new Analytics({ writeKey: WRITE_KEY, endpoint: endpointOf(receiver), clock: new ManualClock(), debug: false, ...options });
  clients.push(created);
  return created;
}

function expectAnalyticsError(call: () => unknown, code: string, message?: string): void {
  let caught: unknown;
  try {
    call();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(AnalyticsError);
  expect((caught as AnalyticsError).code).toBe(code);
  if (message !== undefined) expect((caught as AnalyticsError).message).toBe(message);
}

afterEach(async () => {
  const open = clients;
  clients = [];
  await Promise.all(open.map((created) => created.close()));
  const running = servers;
  servers = [];
  await Promise.all(running.map((receiver) => receiver.close()));
  vi.unstubAllEnvs();
});

describe("Analytics batching", () => {
  it("sends 45 messages as batches of 20, 20 and 5, the last 5 when closed", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    const sent: QueuedMessage[] = [];
    for (let i = 0; i < 45; i += 1) sent.push(analytics.track({ userId: `u${i}`, event: "Item Viewed", properties: { i } }));

    await analytics.settled();
    expect(receiver.requests.map((request) => parse(request).batch.length)).toEqual([20, 20]);

    await analytics.close();
    expect(receiver.requests).toHaveLength(3);
    expect(parse(receiver.requests[2]!).batch).toHaveLength(5);
    const received = receiver.requests.flatMap(idsOf);
    expect([...received].sort()).toEqual(sent.map((message) => message.messageId).sort());
    expect(new Set(received).size).toBe(45);
  });

  it("posts JSON {batch, sentAt} to /v1/batch with basic auth, the user agent and context.library on each message", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    const queued = analytics.identify({ userId: "u1", traits: { plan: "pro" } });
    expect(queued.type).toBe("identify");
    expect(queued.messageId).toMatch(UUID);
    await analytics.flush();

    expect(receiver.requests).toHaveLength(1);
    const request = receiver.requests[0]!;
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/v1/batch");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["user-agent"]).toBe(`wh/${VERSION}`);
    expect(USER_AGENT).toBe(`wh/${VERSION}`);
    expect(request.headers.authorization).toBe(BASIC);
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from("wk_test_Zq81xY:").toString("base64")}`);

    const body = parse(request);
    expect(Object.keys(body).sort()).toEqual(["batch", "sentAt"]);
    expect(body.sentAt).toMatch(ISO_UTC_MS);
    expect(body.sentAt).toBe(new Date(START_MS).toISOString());
    const [message] = body.batch;
    expect(message).toEqual({
      type: "identify",
      userId: "u1",
      traits: { plan: "pro" },
      messageId: queued.messageId,
      timestamp: "2026-11-21T09:30:08.276Z",
      context: { library: { name: "wh", version: VERSION } },
    });
  });

  it("gives every message a type, a UUID messageId, a timestamp and context.library", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    analytics.identify({ userId: "u1" });
    analytics.track({ userId: "u1", event: "E" });
    analytics.page({ anonymousId: "a1", name: "Home", category: "Docs" });
    analytics.screen({ userId: "u1", name: "Checkout" });
    analytics.group({ userId: "u1", groupId: "g1", traits: { name: "Acme" } });
    analytics.alias({ userId: "u1", previousId: "a1" });
    await analytics.flush();

    const batch = parse(receiver.requests[0]!).batch;
    expect(batch.map((message) => message.type)).toEqual(["identify", "track", "page", "screen", "group", "alias"]);
    for (const message of batch) {
      expect(message.messageId).toMatch(UUID);
      expect(message.timestamp).toMatch(ISO_UTC_MS);
      expect(message.context).toEqual({ library: { name: "wh", version: VERSION } });
    }
    expect(new Set(batch.map((message) => message.messageId)).size).toBe(6);
  });

  it("keeps a given messageId and timestamp (converted to UTC ms) and other context fields beside library", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    const given = analytics.track({
      userId: "u1",
      event: "Imported",
      messageId: "m-given-1",
      timestamp: "2026-01-02T03:04:05+02:00",
      context: { ip: "203.0.113.9", locale: "fr-FR" },
      integrations: { All: false, Webhooks: true },
    });
    expect(given.messageId).toBe("m-given-1");
    analytics.page({ userId: "u1", timestamp: new Date(Date.UTC(2025, 4, 6, 7, 8, 9, 10)) });
    await analytics.flush();

    const [first, second] = parse(receiver.requests[0]!).batch;
    expect(first).toMatchObject({
      messageId: "m-given-1",
      timestamp: "2026-01-02T01:04:05.000Z",
      context: { ip: "203.0.113.9", locale: "fr-FR", library: { name: "wh", version: VERSION } },
      integrations: { All: false, Webhooks: true },
    });
    expect(second?.timestamp).toBe("2025-05-06T07:08:09.010Z");
  });

  it("sends every message in its own request at once with flushAt: 1", async () => {
    const receiver = await server();
    const analytics = client(receiver, { flushAt: 1 });
    const first = analytics.track({ userId: "u1", event: "A" });
    expect(analytics.pendingBatches).toBe(1);
    await analytics.settled();
    expect(receiver.requests.map(idsOf)).toEqual([[first.messageId]]);

    const second = analytics.track({ userId: "u1", event: "B" });
    const third = analytics.track({ userId: "u1", event: "C" });
    await analytics.settled();
    expect(receiver.requests.map(idsOf).sort()).toEqual([[first.messageId], [second.messageId], [third.messageId]].sort());
  });

  it("takes size as an alias of flushAt", async () => {
    const receiver = await server();
    const analytics = client(receiver, { size: 1 });
    const message = analytics.identify({ userId: "u1" });
    await analytics.settled();
    expect(receiver.requests.map(idsOf)).toEqual([[message.messageId]]);

    const receiver3 = await server();
    const three = client(receiver3, { size: 3 });
    for (let i = 0; i < 7; i += 1) three.identify({ userId: `u${i}` });
    await three.close();
    expect(receiver3.requests.map((request) => parse(request).batch.length).sort()).toEqual([1, 3, 3]);
  });

  it("flushes on the timer once flushAfterMs has passed, and restarts the timer after the flush", async () => {
    const receiver = await server();
    const clock = new ManualClock();
    const analytics = client(receiver, { clock, flushAfterMs: 5_000 });
    const ids = [
      analytics.track({ userId: "u1", event: "A" }),
      analytics.track({ userId: "u1", event: "B" }),
      analytics.track({ userId: "u1", event: "C" }),
    ].map((message) => message.messageId);
    expect(clock.requested).toEqual([5_000]);

    await ticks();
    await clock.advance(4_999);
    await analytics.settled();
    expect(receiver.requests).toHaveLength(0);

    await clock.advance(1);
    await analytics.settled();
    expect(receiver.requests.map(idsOf)).toEqual([ids]);

    const later = [analytics.identify({ userId: "u2" }), analytics.identify({ userId: "u3" })].map((message) => message.messageId);
    expect(clock.requested).toEqual([5_000, 5_000]);
    await clock.advance(4_999);
    await analytics.settled();
    expect(receiver.requests).toHaveLength(1);
    await clock.advance(1);
    await analytics.settled();
    expect(receiver.requests.map(idsOf)).toEqual([ids, later]);
  });

  it("counts the timer from the last flush, not from the latest message", async () => {
    const receiver = await server();
    const clock = new ManualClock();
    const analytics = client(receiver, { clock, flushAfterMs: 5_000 });
    analytics.track({ userId: "u1", event: "A" });
    await clock.advance(3_000);
    analytics.track({ userId: "u1", event: "B" });
    await clock.advance(2_000);
    await analytics.settled();
    expect(receiver.requests.map((request) => parse(request).batch.length)).toEqual([2]);
  });

  it("never sends a body over 500,000 bytes: 40 messages of about 30 KB arrive once each, in order", async () => {
    const receiver = await server();
    const analytics = client(receiver, { flushAt: 100 });
    const base = Buffer.byteLength(JSON.stringify({ type: "track", userId: "u1", event: "Big", properties: { i: 0, pad: "" } })) + 150;
    const sizes: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 40; i += 1) {
      const target = 29_100 + ((i * 977) % 2_700);
      ids.push(analytics.track({ userId: "u1", event: "Big", properties: { i, pad: "p".repeat(target - base) } }).messageId);
    }
    await analytics.close();

    expect(receiver.requests.length).toBeGreaterThan(2);
    for (const request of receiver.requests) expect(request.body.length).toBeLessThanOrEqual(500_000);

    const firstIndex = (body: { batch: Array<{ properties?: unknown }> }): number => Number((body.batch[0]?.properties as { i?: number } | undefined)?.i);
    const batches = receiver.requests.map(parse).sort((a, b) => firstIndex(a) - firstIndex(b));
    const messages = batches.flatMap((body) => body.batch);
    expect(messages.map((message) => (message.properties as { i: number }).i)).toEqual([...Array(40).keys()]);
    expect(messages.map((message) => message.messageId)).toEqual(ids);
    for (const message of messages) sizes.push(Buffer.byteLength(JSON.stringify(message)));
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(29_000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(31_900);

    // Each batch was cut because the next message would not fit: its body plus a comma and that message pass 500 KB.
    const bodies = batches.map((body) => Buffer.byteLength(JSON.stringify(body)));
    for (let b = 0; b < batches.length - 1; b += 1) {
      const next = batches[b + 1]!.batch[0]!;
      expect(bodies[b]! + 1 + Buffer.byteLength(JSON.stringify(next))).toBeGreaterThan(500_000);
    }
  });

  // 16 messages: 15 of 31,300 bytes and a last one that brings the body, its 15 commas counted,
  // to exactly 500,000 bytes (one request) or one byte past it (the last message waits for the next).
  it.each([
    [500_000, [16]],
    [500_001, [15, 1]],
  ])("counts the commas between messages: 16 messages making a body of %i bytes go in requests of %j", async (bodyBytes, batchSizes) => {
    const emptyBody = Buffer.byteLength(JSON.stringify({ batch: [], sentAt: new Date(START_MS).toISOString() }));
    // A message's bytes are its padding plus those of the same message unpadded, sent once to see
    // them (the id and timestamp the client adds are always as long).
    const probe = await server();
    const probing = client(probe);
    probing.track({ userId: "u1", event: "Edge", properties: { pad: "" } });
    await probing.close();
    const unpadded = probe.requests[0]!.body.length - emptyBody;

    const receiver = await server();
    const analytics = client(receiver, { flushAt: 100 });
    const last = bodyBytes - emptyBody - 15 * 31_300 - 15;
    for (const size of [...Array<number>(15).fill(31_300), last])
      analytics.track({ userId: "u1", event: "Edge", properties: { pad: "p".repeat(size - unpadded) } });
    await analytics.close();
    // Batches are sent side by side: they may arrive in either order.
    expect(receiver.requests.map((request) => parse(request).batch.length).sort((a, b) => b - a)).toEqual(batchSizes);
    if (batchSizes.length === 1) expect(receiver.requests[0]!.body.length).toBe(500_000);
  });

  it("refuses a 40 KB message with E_MESSAGE_TOO_LARGE and never sends it", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    const small = analytics.track({ userId: "u1", event: "Small" });
    expectAnalyticsError(
      () => analytics.track({ userId: "u1", event: "Huge", messageId: "m-huge", properties: { pad: "h".repeat(40_000) } }),
      "E_MESSAGE_TOO_LARGE",
    );
    await analytics.close();
    expect(receiver.requests.flatMap(idsOf)).toEqual([small.messageId]);
    expect(receiver.requests.some((request) => request.body.includes("m-huge"))).toBe(false);
  });

  it("posts under the endpoint's path prefix", async () => {
    const receiver = await server();
    const analytics = client(receiver, { endpoint: `${endpointOf(receiver)}/api` });
    analytics.identify({ userId: "u1" });
    await analytics.flush();
    const slashed = client(receiver, { endpoint: `${endpointOf(receiver)}/api/` });
    slashed.identify({ userId: "u1" });
    await slashed.flush();
    expect(receiver.requests.map((request) => request.path)).toEqual(["/api/v1/batch", "/api/v1/batch"]);
  });

  it("takes the endpoint from WH_ENDPOINT when none is given", async () => {
    const receiver = await server();
    vi.stubEnv("WH_ENDPOINT", endpointOf(receiver));
    const analytics = new Analytics({ writeKey: WRITE_KEY, clock: new ManualClock(), debug: false });
    clients.push(analytics);
    analytics.identify({ userId: "u1" });
    await analytics.flush();
    expect(receiver.requests.map((request) => request.path)).toEqual(["/v1/batch"]);
  });
});

describe("Analytics validation", () => {
  const IDENTITY = "You must pass either an 'anonymousId' or 'userId'.";

  it("throws E_INVALID_MESSAGE with analytics-go's words for each rule, and queues nothing invalid", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    const valid = [analytics.track({ userId: "u1", event: "Valid" })];
    expectAnalyticsError(() => analytics.track({ userId: "u1" } as TrackFields), "E_INVALID_MESSAGE", "You must pass 'event'.");
    expectAnalyticsError(() => analytics.track({ userId: "u1", event: "" }), "E_INVALID_MESSAGE", "You must pass 'event'.");
    // @ts-expect-error: no userId or anonymousId is a compile error too; a JavaScript caller gets the throw
    expectAnalyticsError(() => analytics.identify({ traits: { a: 1 } }), "E_INVALID_MESSAGE", IDENTITY);
    // @ts-expect-error: no userId or anonymousId is a compile error too; a JavaScript caller gets the throw
    expectAnalyticsError(() => analytics.track({ event: "E" }), "E_INVALID_MESSAGE", IDENTITY);
    // @ts-expect-error: no userId or anonymousId is a compile error too; a JavaScript caller gets the throw
    expectAnalyticsError(() => analytics.page({ name: "Home" }), "E_INVALID_MESSAGE", IDENTITY);
    // @ts-expect-error: no userId or anonymousId is a compile error too; a JavaScript caller gets the throw
    expectAnalyticsError(() => analytics.screen({ name: "Home" }), "E_INVALID_MESSAGE", IDENTITY);
    expectAnalyticsError(() => analytics.group({ userId: "u1" } as GroupFields), "E_INVALID_MESSAGE", "You must pass a 'groupId'.");
    expectAnalyticsError(() => analytics.alias({ previousId: "p1" } as AliasFields), "E_INVALID_MESSAGE", "You must pass a 'userId'.");
    expectAnalyticsError(() => analytics.alias({ userId: "u1" } as AliasFields), "E_INVALID_MESSAGE", "You must pass a 'previousId'.");
    expectAnalyticsError(() => analytics.track({ userId: "u1", event: "E", timestamp: "not a time" }), "E_INVALID_MESSAGE");
    expectAnalyticsError(() => analytics.track({ userId: "u1", event: "E", timestamp: "2026-02-31T10:00:00Z" }), "E_INVALID_MESSAGE");
    expectAnalyticsError(() => analytics.enqueue("delete", { userId: "u1" }), "E_INVALID_MESSAGE");
    expectAnalyticsError(() => analytics.enqueue("purchase", { userId: "u1" }), "E_INVALID_MESSAGE");
    valid.push(analytics.group({ anonymousId: "a1", groupId: "g1" }));
    await analytics.close();

    expect(receiver.requests.flatMap(idsOf)).toEqual(valid.map((message) => message.messageId));
  });

  it("refuses a missing write key with E_NO_WRITE_KEY", () => {
    expectAnalyticsError(() => new Analytics({ writeKey: "", endpoint: "http://127.0.0.1:9" }), "E_NO_WRITE_KEY");
    expectAnalyticsError(() => new Analytics({ endpoint: "http://127.0.0.1:9" } as AnalyticsOptions), "E_NO_WRITE_KEY");
  });

  it("refuses a missing endpoint when WH_ENDPOINT is not set with E_NO_ENDPOINT", () => {
    vi.stubEnv("WH_ENDPOINT", undefined);
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY }), "E_NO_ENDPOINT");
    vi.stubEnv("WH_ENDPOINT", "");
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY }), "E_NO_ENDPOINT");
  });

  it("refuses a relative or non-http endpoint with E_NO_ENDPOINT", () => {
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY, endpoint: "/v1" }), "E_NO_ENDPOINT");
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY, endpoint: "ingest.example.com" }), "E_NO_ENDPOINT");
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY, endpoint: "ftp://ingest.example.com" }), "E_NO_ENDPOINT");
  });

  it("refuses a flushAt below 1 with E_INVALID_OPTION", () => {
    expectAnalyticsError(() => new Analytics({ writeKey: WRITE_KEY, endpoint: "http://127.0.0.1:9", flushAt: 0 }), "E_INVALID_OPTION");
  });

  it("throws E_CLOSED for a call after close()", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    await analytics.close();
    expectAnalyticsError(() => analytics.track({ userId: "u1", event: "Late" }), "E_CLOSED");
    expectAnalyticsError(() => analytics.identify({ userId: "u1" }), "E_CLOSED");
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("Analytics retries", () => {
  interface Seen {
    success: BatchResult[];
    failure: BatchResult[];
    retry: Array<{ messages: QueuedMessage[]; attempt: number; delayMs: number }>;
  }

  function listen(analytics: Analytics): Seen {
    const seen: Seen = { success: [], failure: [], retry: [] };
    analytics.on("success", (result) => seen.success.push(result));
    analytics.on("failure", (result) => seen.failure.push(result));
    analytics.on("retry", (event) => seen.retry.push(event));
    return seen;
  }

  // T01 … T06: what the client does with each answer of the ingestion API.
  it("T01 retries 503, 503 then 200 with the same messages, sentAt of each attempt and X-Retry-Count, and reports one success with every message", async () => {
    const receiver = await server({ replies: [503, 503, 200] });
    const clock = new InstantClock();
    const analytics = client(receiver, { clock });
    const seen = listen(analytics);
    const queued = [analytics.track({ userId: "u1", event: "A" }), analytics.identify({ userId: "u1" }), analytics.page({ userId: "u1" })];
    await analytics.flush();

    expect(receiver.requests).toHaveLength(3);
    const [first, second, third] = receiver.requests;
    expect(parse(second!).batch).toEqual(parse(first!).batch);
    expect(parse(third!).batch).toEqual(parse(first!).batch);
    // The clock moved by each retry's wait: each attempt says when it was sent.
    const sentAts = receiver.requests.map((request) => Date.parse(parse(request).sentAt));
    expect(sentAts[1]! - sentAts[0]!).toBe(seen.retry[0]!.delayMs);
    expect(sentAts[2]! - sentAts[1]!).toBe(seen.retry[1]!.delayMs);
    expect(receiver.requests.map((request) => request.headers["x-retry-count"])).toEqual([undefined, "1", "2"]);
    for (const request of receiver.requests) expect(idsOf(request)).toEqual(queued.map((message) => message.messageId));
    expect(seen.success).toHaveLength(1);
    expect(seen.failure).toHaveLength(0);
    expect(seen.success[0]!.messages).toEqual(queued);
    expect(seen.success[0]!.bytes).toBe(first!.body.length);
    expect(seen.success[0]!.report.attempts).toBe(3);
    expect(seen.retry.map((event) => event.attempt)).toEqual([1, 2]);
    expect(seen.retry[0]!.delayMs).toBeGreaterThanOrEqual(0);
    expect(seen.retry[0]!.delayMs).toBeLessThan(1_000);
    expect(seen.retry[1]!.delayMs).toBeLessThan(2_000);
    expect(seen.retry.map((event) => event.messages)).toEqual([queued, queued]);
    expect(clock.requested.slice(-2)).toEqual(seen.retry.map((event) => event.delayMs));
  });

  it("T02 retries a 429 after its Retry-After", async () => {
    const receiver = await server({ replies: [{ status: 429, headers: { "Retry-After": "1" } }, 200] });
    const analytics = client(receiver, { clock: new InstantClock() });
    const seen = listen(analytics);
    const message = analytics.track({ userId: "u1", event: "A" });
    await analytics.flush();
    expect(receiver.requests).toHaveLength(2);
    expect(seen.retry).toEqual([{ messages: [message], attempt: 1, delayMs: 1_000, reason: "HTTP 429", giveUpAtMs: expect.any(Number) }]);
    expect(seen.success.map((result) => result.messages)).toEqual([[message]]);
  });

  it("T03 does not retry a 400 and reports a failure after exactly one request", async () => {
    const receiver = await server({ replies: [400] });
    const analytics = client(receiver, { clock: new InstantClock() });
    const seen = listen(analytics);
    const messages = [analytics.track({ userId: "u1", event: "A" }), analytics.track({ userId: "u1", event: "B" })];
    await analytics.flush();
    expect(receiver.requests).toHaveLength(1);
    expect(seen.retry).toHaveLength(0);
    expect(seen.success).toHaveLength(0);
    expect(seen.failure).toHaveLength(1);
    expect(seen.failure[0]!.messages).toEqual(messages);
    expect(seen.failure[0]!.report.targets[0]?.last).toMatchObject({ kind: "response", status: 400 });
  });

  it("T04 gives up after maxAttempts when the server always answers 500", async () => {
    const receiver = await server({ replies: [500] });
    const analytics = client(receiver, { clock: new InstantClock(), maxAttempts: 3 });
    const seen = listen(analytics);
    const message = analytics.track({ userId: "u1", event: "A" });
    await analytics.flush();
    expect(receiver.requests).toHaveLength(3);
    expect(seen.retry.map((event) => event.attempt)).toEqual([1, 2]);
    expect(seen.failure).toHaveLength(1);
    expect(seen.failure[0]!.messages).toEqual([message]);
    expect(seen.failure[0]!.report.attempts).toBe(3);
    expect(seen.failure[0]!.report.targets[0]?.reason).toBe("gave up after 3 attempts");
  });

  it("T05 retries a connection reset", async () => {
    const receiver = await server({ replies: ["reset", 200] });
    const analytics = client(receiver, { clock: new InstantClock() });
    const seen = listen(analytics);
    const message = analytics.track({ userId: "u1", event: "A" });
    await analytics.flush();
    expect(receiver.requests).toHaveLength(2);
    expect(idsOf(receiver.requests[1]!)).toEqual([message.messageId]);
    expect(seen.success.map((result) => result.messages)).toEqual([[message]]);
  });

  it("T06 lets a caller count successes and failures per message", async () => {
    const receiver = await server({ replies: (request) => (request.body.includes('"event":"Rejected"') ? 400 : 200) });
    const analytics = client(receiver, { clock: new InstantClock(), flushAt: 2 });
    const seen = listen(analytics);
    const good = [analytics.track({ userId: "u1", event: "Kept" }), analytics.track({ userId: "u1", event: "Kept" })];
    const bad = [analytics.track({ userId: "u1", event: "Rejected" }), analytics.track({ userId: "u1", event: "Kept" })];
    const last = analytics.track({ userId: "u1", event: "Kept" });
    await analytics.close();
    const succeeded = seen.success.flatMap((result) => result.messages.map((message) => message.messageId));
    const failed = seen.failure.flatMap((result) => result.messages.map((message) => message.messageId));
    expect(succeeded.sort()).toEqual([...good, last].map((message) => message.messageId).sort());
    expect(failed).toEqual(bad.map((message) => message.messageId));
    expect(seen.failure[0]!.messages.map((message) => message.type)).toEqual(["track", "track"]);
  });
});

describe("Analytics flush and close", () => {
  it("close() flushes what is queued and resolves after the server answered", async () => {
    const receiver = await server({ replies: [{ status: 200, delayMs: 50 }] });
    const clock = new ManualClock();
    const analytics = client(receiver, { clock });
    const answered: string[][] = [];
    analytics.on("success", (result) => answered.push(result.messages.map((message) => message.messageId)));
    const message = analytics.track({ userId: "u1", event: "A" });
    expect(clock.sleeping).toBe(1);
    await analytics.close();
    expect(receiver.requests.flatMap(idsOf)).toEqual([message.messageId]);
    expect(answered).toEqual([[message.messageId]]);
    expect(analytics.pendingBatches).toBe(0);
    expect(clock.sleeping).toBe(0);
  });

  it("flush() resolves after the batch was answered and leaves the client open", async () => {
    const receiver = await server({ replies: [{ status: 200, delayMs: 50 }] });
    const analytics = client(receiver);
    let answered = 0;
    analytics.on("success", () => {
      answered += 1;
    });
    analytics.identify({ userId: "u1" });
    await analytics.flush();
    expect(answered).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    analytics.identify({ userId: "u2" });
    await analytics.flush();
    expect(answered).toBe(2);
  });

  it("sends nothing when flushed or closed with an empty queue", async () => {
    const receiver = await server();
    const analytics = client(receiver);
    await analytics.flush();
    await analytics.close();
    await analytics.close();
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("Analytics debug logging", () => {
  it("logs enqueue, flush with size and bytes, response and retry, never the write key", async () => {
    const receiver = await server({ replies: [503, 200] });
    const lines: string[] = [];
    const analytics = client(receiver, { clock: new InstantClock(), debug: true, logger: (line) => lines.push(line), flushAt: 2 });
    const first = analytics.track({ userId: "u1", event: "A" });
    analytics.identify({ userId: "u1" });
    await analytics.settled();
    await analytics.close();

    const bytes = receiver.requests[0]!.body.length;
    expect(lines.some((line) => line.startsWith("analytics: enqueue track") && line.includes(first.messageId))).toBe(true);
    expect(lines.some((line) => line.startsWith("analytics: enqueue identify"))).toBe(true);
    expect(lines).toContain(`analytics: flush 2 messages, ${bytes} bytes (2 messages queued)`);
    expect(lines.some((line) => line.startsWith("analytics: response HTTP 503"))).toBe(true);
    expect(lines.some((line) => line.startsWith("analytics: retry in"))).toBe(true);
    expect(lines.some((line) => line.startsWith("analytics: response HTTP 200"))).toBe(true);
    const text = lines.join("\n");
    expect(text).not.toContain(WRITE_KEY);
    expect(text).not.toContain(BASIC.slice("Basic ".length));
  });

  it("logs a failed batch without the write key", async () => {
    const receiver = await server({ replies: [401] });
    const lines: string[] = [];
    const analytics = client(receiver, { debug: true, logger: (line) => lines.push(line) });
    analytics.identify({ userId: "u1" });
    await analytics.close();
    expect(lines.some((line) => line.includes("failed") && line.includes("HTTP 401"))).toBe(true);
    expect(lines.join("\n")).not.toContain(WRITE_KEY);
  });

  it("logs nothing when DEBUG is unset and no debug option is given", async () => {
    vi.stubEnv("DEBUG", undefined);
    const receiver = await server({ replies: [503, 200] });
    const lines: string[] = [];
    const analytics = client(receiver, { clock: new InstantClock(), debug: undefined, logger: (line) => lines.push(line) });
    analytics.track({ userId: "u1", event: "A" });
    await analytics.close();
    expect(receiver.requests).toHaveLength(2);
    expect(lines).toEqual([]);
  });

  it("logs when DEBUG=analytics is set, and not when debug: false overrides it", async () => {
    vi.stubEnv("DEBUG", "express,analytics");
    const receiver = await server();
    const on: string[] = [];
    const logging = client(receiver, { debug: undefined, logger: (line) => on.push(line) });
    logging.track({ userId: "u1", event: "A" });
    await logging.close();
    expect(on.some((line) => line.startsWith("analytics: flush 1 messages"))).toBe(true);

    const off: string[] = [];
    const silent = client(receiver, { debug: false, logger: (line) => off.push(line) });
    silent.track({ userId: "u1", event: "A" });
    await silent.close();
    expect(off).toEqual([]);
  });

  it.each([
    ["analytics", true],
    ["foo,analytics", true],
    ["foo analytics", true],
    ["analyticsx", false],
    ["", false],
    [undefined, false],
  ])("isDebugEnabled(%j) is %s", (value, expected) => {
    expect(isDebugEnabled(value)).toBe(expected);
  });
});

describe("Analytics close(), Retry-After and batch limits", () => {
  const listen = (analytics: Analytics): { success: BatchResult[]; failure: BatchResult[] } => {
    const seen = { success: [] as BatchResult[], failure: [] as BatchResult[] };
    analytics.on("success", (result) => seen.success.push(result));
    analytics.on("failure", (result) => seen.failure.push(result));
    return seen;
  };

  it("refuses a call made while close() waits (E_CLOSED): nothing is queued and then forgotten", async () => {
    const receiver = await server({ replies: [{ status: 200, delayMs: 100 }] });
    const analytics = client(receiver, { clock: new InstantClock() });
    analytics.track({ userId: "u1", event: "A" });
    const closing = analytics.close();
    expect(() => analytics.track({ userId: "u1", event: "B" })).toThrow(expect.objectContaining({ code: "E_CLOSED" }));
    expect(await closing).toEqual({ unsent: [] });
    expect(receiver.requests.flatMap((request) => parse(request).batch.map((message) => message.event))).toEqual(["A"]);
  });

  it("bounds close() by timeoutMs and reports what it could not send", async () => {
    const receiver = await server({ replies: ["hang"] });
    const analytics = client(receiver, { timeoutMs: 60_000 });
    const seen = listen(analytics);
    const message = analytics.track({ userId: "u1", event: "A" });
    const started = Date.now();
    const { unsent } = await analytics.close({ timeoutMs: 300 });
    expect(unsent).toEqual([message]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(seen.failure).toHaveLength(0);
  });

  it("reports in close() the messages of batches that failed before it, as well as those it stopped", async () => {
    const receiver = await server({ replies: (request) => (request.body.toString().includes('"Refused"') ? 400 : 200) });
    const analytics = client(receiver, { clock: new InstantClock(), flushAt: 1 });
    const refused = analytics.track({ userId: "u1", event: "Refused" });
    analytics.track({ userId: "u1", event: "Fine" });
    await analytics.flush();
    expect(await analytics.close()).toEqual({ unsent: [refused] });
  });

  it("sends at most 16 batches at once and the rest in turn, each with its whole timeout", async () => {
    let open = 0;
    let most = 0;
    const receiver = await server({
      replies: () => {
        open += 1;
        most = Math.max(most, open);
        setTimeout(() => (open -= 1), 40);
        return { status: 200, delayMs: 40 };
      },
    });
    const analytics = client(receiver, { flushAt: 1, timeoutMs: 1_000 });
    for (let index = 0; index < 64; index += 1) analytics.track({ userId: "u1", event: `E${index}` });
    expect(await analytics.close()).toEqual({ unsent: [] });
    expect(receiver.requests).toHaveLength(64);
    expect(most).toBeLessThanOrEqual(16);
  });

  it("prints no MaxListenersExceededWarning while 16 batches (of 50) wait to retry", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on("warning", onWarning);
    try {
      const receiver = await server({ replies: () => 503 });
      const clock = new ManualClock();
      const analytics = client(receiver, { clock, flushAt: 1 });
      for (let index = 0; index < 50; index += 1) analytics.track({ userId: "u1", event: `E${index}` });
      await vi.waitFor(() => expect(clock.sleeping).toBe(16));
      await ticks();
      const { unsent } = await analytics.close({ timeoutMs: 50 });
      expect(unsent).toHaveLength(50);
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("caps a Retry-After above 300 s at 300 s, and retries", async () => {
    const receiver = await server({ replies: [{ status: 429, headers: { "Retry-After": "3600" } }, 200] });
    const clock = new InstantClock();
    const analytics = client(receiver, { clock });
    const seen = listen(analytics);
    analytics.track({ userId: "u1", event: "A" });
    await analytics.flush();
    expect(receiver.requests).toHaveLength(2);
    expect(clock.requested).toContain(300_000);
    expect(seen.success).toHaveLength(1);
  });

  it("never puts more than 2,500 messages in one batch", async () => {
    const receiver = await server();
    const analytics = client(receiver, { clock: new InstantClock(), flushAt: 10_000 });
    for (let index = 0; index < 2_600; index += 1) analytics.track({ userId: "u", event: "E" });
    await analytics.close();
    expect(receiver.requests.map((request) => parse(request).batch.length).sort((a, b) => b - a)).toEqual([2_500, 100]);
  });
});
