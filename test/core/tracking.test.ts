import { describe, expect, it } from "vitest";
import type { MessageStamps } from "../../src/core/message/prepare.js";
import { MAX_BATCH_MESSAGES } from "../../src/core/batch.js";
import { RecentBatch, RecentIds } from "../../src/core/message/recent-ids.js";
import { basicAuthWriteKey, expandRequest, trackingCall } from "../../src/core/message/tracking.js";
import { Registry } from "../../src/core/prometheus.js";

const stamps: MessageStamps = { now: () => new Date("2026-11-22T10:00:00.000Z"), newId: () => "new-id" };
const receivedAt = new Date("2026-11-22T10:00:00.000Z");
const context = { receivedAt, ip: "203.0.113.9", stamps };

describe("trackingCall", () => {
  it("knows the long and the one-letter paths, and nothing else", () => {
    expect(["identify", "track", "page", "screen", "group", "alias", "batch", "import"].map((call) => trackingCall(`/v1/${call}`))).toEqual([
      "identify",
      "track",
      "page",
      "screen",
      "group",
      "alias",
      "batch",
      "batch",
    ]);
    expect(["i", "t", "p", "s", "g", "a", "b"].map((call) => trackingCall(`/v1/${call}`))).toEqual([
      "identify",
      "track",
      "page",
      "screen",
      "group",
      "alias",
      "batch",
    ]);
    expect(trackingCall("/v1/track/")).toBe("track");
    for (const path of ["/v1/x", "/v2/track", "/track", "/v1/", "/v1/track/extra"]) expect(trackingCall(path)).toBeUndefined();
  });
});

describe("expandRequest", () => {
  it("takes a single call's type from the path, and adds messageId, receivedAt, timestamp and, for a browser's event, context.ip", () => {
    const library = { name: "analytics.js", version: "1.84.3" };
    const result = expandRequest("track", { userId: "u1", event: "E", writeKey: "wk", context: { library } }, context);
    expect(result).toEqual({
      ok: true,
      writeKey: "wk",
      events: [
        {
          index: 0,
          event: {
            userId: "u1",
            event: "E",
            type: "track",
            messageId: "new-id",
            receivedAt: "2026-11-22T10:00:00.000Z",
            timestamp: "2026-11-22T10:00:00.000Z",
            context: { library, ip: "203.0.113.9" },
          },
          text: expect.any(String),
        },
      ],
      rejected: [],
    });
    if (result.ok) expect(JSON.parse(result.events[0]?.text ?? "")).toEqual(result.events[0]?.event);
  });

  it("fills no context.ip for a server-side library's event, nor one without a library", () => {
    for (const body of [
      { userId: "u1", event: "E", context: { library: { name: "analytics-python" } } },
      { userId: "u1", event: "E" },
    ]) {
      const result = expandRequest("track", body, context);
      expect(result.ok && (result.events[0]?.event.context as Record<string, unknown> | undefined)?.ip).toBeUndefined();
    }
  });

  it("keeps the body's type, messageId and context.ip when given", () => {
    const result = expandRequest("track", { type: "track", userId: "u1", event: "E", messageId: "m-1", context: { ip: "198.51.100.1" } }, context);
    expect(result.ok && result.events[0]?.event).toMatchObject({ messageId: "m-1", context: { ip: "198.51.100.1" } });
  });

  it("corrects the timestamp for the client's clock: receivedAt - (sentAt - originalTimestamp)", () => {
    const result = expandRequest(
      "batch",
      { sentAt: "2026-11-22T11:00:00.000Z", batch: [{ type: "track", userId: "u", event: "E", timestamp: "2026-11-22T10:59:50.000Z" }] },
      context,
    );
    expect(result.ok && result.events[0]?.event).toMatchObject({
      originalTimestamp: "2026-11-22T10:59:50.000Z",
      timestamp: "2026-11-22T09:59:50.000Z",
      sentAt: "2026-11-22T11:00:00.000Z",
    });
  });

  it("without sentAt takes the given timestamp as timestamp (in UTC), keeping the client's text, offset and all, as originalTimestamp", () => {
    const result = expandRequest("track", { userId: "u", event: "E", timestamp: "2026-01-02T03:04:05+02:00" }, context);
    expect(result.ok && result.events[0]?.event).toMatchObject({ originalTimestamp: "2026-01-02T03:04:05+02:00", timestamp: "2026-01-02T01:04:05.000Z" });
  });

  it("keeps sentAt as the client wrote it", () => {
    const result = expandRequest(
      "batch",
      { sentAt: "2026-11-22T11:00:00+0000", batch: [{ type: "track", userId: "u", event: "E", timestamp: "2026-11-22T10:59:50+0000" }] },
      context,
    );
    expect(result.ok && result.events[0]?.event).toMatchObject({
      sentAt: "2026-11-22T11:00:00+0000",
      originalTimestamp: "2026-11-22T10:59:50+0000",
      timestamp: "2026-11-22T09:59:50.000Z",
    });
  });

  it("merges the batch's context and integrations into each event, the event's keys winning", () => {
    const result = expandRequest(
      "batch",
      {
        context: { locale: "fr", library: { name: "x" } },
        integrations: { All: false },
        batch: [
          { type: "track", userId: "u", event: "A", context: { locale: "de" } },
          { type: "identify", userId: "u", integrations: { Webhooks: true } },
        ],
      },
      { ...context, ip: undefined },
    );
    expect(result.ok && result.events.map(({ event }) => [event.context, event.integrations])).toEqual([
      [{ locale: "de", library: { name: "x" } }, { All: false }],
      [
        { locale: "fr", library: { name: "x" } },
        { All: false, Webhooks: true },
      ],
    ]);
  });

  it("drops a writeKey inside an event", () => {
    const result = expandRequest("batch", { batch: [{ type: "track", userId: "u", event: "E", writeKey: "inner" }] }, context);
    expect(result.ok && result.writeKey).toBeUndefined();
    expect(result.ok && result.events[0]?.event.writeKey).toBeUndefined();
  });

  it("refuses a request whole only when it is not a JSON object, a batch without its array, or a single call over 32 KiB", () => {
    expect(expandRequest("track", [1], context)).toEqual({ ok: false, code: "invalid_request", error: "the body must be a JSON object" });
    expect(expandRequest("batch", { batch: {}, writeKey: "wk" }, context)).toEqual({
      ok: false,
      code: "invalid_request",
      error: "a batch request needs a `batch` array",
      writeKey: "wk",
    });
    const big = { userId: "u", event: "E", writeKey: "wk", properties: { pad: "x".repeat(32_768) } };
    expect(expandRequest("track", big, context)).toMatchObject({ ok: false, code: "body_too_large", writeKey: "wk" });
  });

  it("measures a batch's event as it was sent, though enriching drops or rewrites members: over 32 KiB rejected, at it kept", () => {
    const limit = 32 * 1024;
    /** A batch event of exactly `bytes` as sent (2-byte characters), its padding in `member`, which enriching drops (writeKey), rewrites, or keeps. */
    const sentOf = (member: string, bytes: number) => {
      const event: Record<string, unknown> = { type: "track", userId: "u", event: "E", messageId: "m", timestamp: "2026-11-22T10:00:00Z", [member]: "" };
      const missing = bytes - Buffer.byteLength(JSON.stringify(event));
      event[member] = `${"é".repeat(Math.floor(missing / 2))}${"x".repeat(missing % 2)}`;
      expect(Buffer.byteLength(JSON.stringify(event))).toBe(bytes);
      return event;
    };
    for (const member of ["writeKey", "receivedAt", "originalTimestamp", "anonymousId"]) {
      const result = expandRequest("batch", { batch: [sentOf(member, limit), sentOf(member, limit + 1)] }, context);
      if (!result.ok) throw new Error(result.error);
      expect({ member, kept: result.events.map(({ index }) => index), rejected: result.rejected.map(({ index, reason }) => [index, reason]) }).toEqual({
        member,
        kept: [0],
        rejected: [[1, "too_large"]],
      });
      expect(result.events.map(({ text }) => JSON.parse(text))).toEqual(result.events.map(({ event }) => event));
    }
  });

  it("rejects each event that cannot be taken by its index, messageId and reason, keeping the others", () => {
    const good = { type: "track", userId: "u", event: "E" };
    const rejectedOf = (call: string, body: unknown) => {
      const result = expandRequest(call, body, context);
      if (!result.ok) throw new Error(result.error);
      return { kept: result.events.map(({ index }) => index), rejected: result.rejected };
    };
    expect(rejectedOf("batch", { batch: [good, 5, { ...good, messageId: "big", properties: { pad: "x".repeat(33_000) } }, good] })).toEqual({
      kept: [0, 3],
      rejected: [
        { index: 1, messageId: undefined, reason: "not_an_object", error: "an event must be a JSON object", sent: 5 },
        { index: 2, messageId: "big", reason: "too_large", error: expect.stringContaining("32 KB"), sent: expect.objectContaining({ messageId: "big" }) },
      ],
    });
    const many = rejectedOf("batch", { batch: Array.from({ length: MAX_BATCH_MESSAGES + 1 }, () => good) });
    expect(many.kept).toHaveLength(MAX_BATCH_MESSAGES);
    expect(many.rejected).toEqual([
      { index: MAX_BATCH_MESSAGES, messageId: undefined, reason: "over_batch_limit", error: "past the 2500 events one batch may carry", sent: good },
    ]);
    expect(rejectedOf("track", { userId: "u", event: "E", timestamp: "yesterday" }).rejected).toEqual([
      { index: 0, messageId: undefined, reason: "invalid_timestamp", error: expect.stringContaining("not an ISO 8601"), sent: expect.any(Object) },
    ]);
    expect(rejectedOf("track", { userId: "u", event: "E", timestamp: 5 }).rejected).toMatchObject([{ error: expect.stringContaining("ISO 8601 string") }]);
    expect(rejectedOf("batch", { sentAt: "soon", batch: [{ type: "track", timestamp: "2026-11-22T10:00:00Z" }] }).rejected).toMatchObject([
      { error: expect.stringContaining("sentAt") },
    ]);
  });
});

describe("basicAuthWriteKey", () => {
  it("reads the user of Basic auth, the way Segment's libraries send the write key", () => {
    expect(basicAuthWriteKey(`Basic ${Buffer.from("wk_123:").toString("base64")}`)).toBe("wk_123");
    expect(basicAuthWriteKey(`basic ${Buffer.from("wk_123").toString("base64")}`)).toBe("wk_123");
    expect(basicAuthWriteKey(`Basic ${Buffer.from(":").toString("base64")}`)).toBeUndefined();
    expect(basicAuthWriteKey("Bearer abc")).toBeUndefined();
    expect(basicAuthWriteKey(undefined)).toBeUndefined();
  });
});

describe("RecentIds", () => {
  it("remembers the last N ids and forgets the oldest first", () => {
    const recent = new RecentIds(2);
    recent.add("a");
    recent.add("b");
    expect([recent.has("a"), recent.has("b"), recent.has("c")]).toEqual([true, true, false]);
    recent.add("c");
    expect([recent.has("a"), recent.has("b"), recent.has("c")]).toEqual([false, true, true]);
  });

  it("keeps exactly the last N distinct ids through many turns of its ring", () => {
    const recent = new RecentIds(3);
    for (let index = 0; index < 1_000; index += 1) recent.add(`id-${index}`);
    expect(["id-996", "id-997", "id-998", "id-999"].map((id) => recent.has(id))).toEqual([false, true, true, true]);
  });

  it("keeps exactly the last N ids as it grows and turns, whatever N (its table of digests deletes in place)", () => {
    for (const size of [1, 1_000, 5_003]) {
      const recent = new RecentIds(size);
      const ids = Array.from({ length: 12 * size + 7 }, (_, index) => `0b7c4e8a-6c2e-4f7e-9a51-${String(index).padStart(12, "0")}`);
      ids.forEach((id, index) => {
        recent.add(id);
        // Through its growth: everything added so far, while the window is not full.
        if (index === Math.floor(size / 2)) expect(ids.slice(0, index + 1).every((each) => recent.has(each))).toBe(true);
      });
      expect(ids.slice(-size).every((id) => recent.has(id))).toBe(true);
      expect(ids.slice(0, -size).filter((id) => recent.has(id))).toEqual([]);
    }
  });

  it("does not let an id added twice push out a newer one or be forgotten early", () => {
    const recent = new RecentIds(2);
    recent.add("a");
    recent.add("a");
    recent.add("b");
    expect([recent.has("a"), recent.has("b")]).toEqual([true, true]);
    recent.add("c");
    expect([recent.has("a"), recent.has("b"), recent.has("c")]).toEqual([false, true, true]);
  });

  it("tells apart ids that share their code units two by two but for an odd last one, a NUL, or the order", () => {
    const ids = ["", "a", "a\u0000", "\u0000a", "ab", "ba", "abc", "abc\u0000", "ab\u0000c", "\ud83d\ude00", "\ude00\ud83d"];
    for (const id of ids) {
      const recent = new RecentIds(4);
      recent.add(id);
      expect(ids.filter((other) => recent.has(other))).toEqual([id]);
    }
  });

  it("takes a request's ids as accepting does: new unless in the window or earlier in the request, remembered only when told", () => {
    const recent = new RecentIds(1_000);
    recent.add("old");
    const batch = new RecentBatch();
    const ids = ["a", "old", "b", "a", ...Array.from({ length: 300 }, (_, index) => `id-${index}`), "b", "id-7"];
    expect(ids.filter((id) => recent.fresh(id, batch))).toEqual(["a", "b", ...Array.from({ length: 300 }, (_, index) => `id-${index}`)]);
    // Not stored yet (the spool may refuse the request): a retry of it is new again.
    expect(["a", "b", "id-299"].map((id) => recent.has(id))).toEqual([false, false, false]);
    recent.remember(batch);
    expect(["a", "b", "id-0", "id-299", "old", "c"].map((id) => recent.has(id))).toEqual([true, true, true, true, true, false]);
    expect(recent.fresh("a", new RecentBatch())).toBe(false);
  });

  it("still drops a request's repeated id with a window of 0", () => {
    const recent = new RecentIds(0);
    const batch = new RecentBatch();
    expect(["a", "a", "b"].map((id) => recent.fresh(id, batch))).toEqual([true, false, true]);
    recent.remember(batch);
    expect(recent.fresh("a", new RecentBatch())).toBe(true);
  });

  it("remembers nothing with a window of 0", () => {
    const recent = new RecentIds(0);
    recent.add("a");
    expect(recent.has("a")).toBe(false);
  });
});

describe("Prometheus text format", () => {
  it("renders counters with escaped labels, gauges and cumulative histograms", () => {
    const registry = new Registry();
    const requests = registry.counter("requests_total", "Requests.");
    requests.inc({ status: "200" });
    requests.inc({ status: "200" });
    requests.inc({ path: 'a"b\\c\nd' });
    registry.gauge("depth", "Depth.", () => 3);
    const latency = registry.histogram("latency_seconds", "Latency.", [0.1, 1]);
    latency.observe(0.05);
    latency.observe(0.5);
    latency.observe(5);
    expect(registry.render()).toBe(
      [
        "# HELP requests_total Requests.",
        "# TYPE requests_total counter",
        'requests_total{status="200"} 2',
        'requests_total{path="a\\"b\\\\c\\nd"} 1',
        "# HELP depth Depth.",
        "# TYPE depth gauge",
        "depth 3",
        "# HELP latency_seconds Latency.",
        "# TYPE latency_seconds histogram",
        'latency_seconds_bucket{le="0.1"} 1',
        'latency_seconds_bucket{le="1"} 2',
        'latency_seconds_bucket{le="+Inf"} 3',
        "latency_seconds_sum 5.55",
        "latency_seconds_count 3",
        "",
      ].join("\n"),
    );
  });
});
