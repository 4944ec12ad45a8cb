import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../helpers/recording-server.js";
import { FAST_POLICY, createHarness, deliver, gapMs, targetOf } from "./support.js";

const BODY = '{"version":1,"type":"identify","userId":"u1","traits":{},"timestamp":"2026-11-21T09:30:08.276Z"}';

/** Room for a Retry-After of a few seconds; the fast backoff alone would retry within 20 ms. */
const POLICY = { ...FAST_POLICY, windowMs: 10_000 };

describe("deliverMessage honours Retry-After against a real server", () => {
  const harness = createHarness();
  afterEach(() => harness.close());

  // The gap is what the server saw between two requests: it shows that wh waited, not how fast it ran.
  it.each<[string, string, Reply]>([
    ["T21", "429", { status: 429, headers: { "Retry-After": "1" } }],
    ["T22", "503", { status: 503, headers: { "Retry-After": "1" } }],
  ])("%s waits the Retry-After seconds of a %s before the next attempt", async (_id, _status, first) => {
    const server = await harness.server({ replies: [first, 200] });
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport(), policy: POLICY });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: server.url, attempts: 2 });
    expect(events.find((event) => event.type === "retry")).toMatchObject({ delayMs: 1_000 });
    expect(gapMs(server, 0, 1)).toBeGreaterThanOrEqual(900);
  });

  it("T23 waits until a Retry-After HTTP date before the next attempt", async () => {
    const server = await harness.server({
      // Computed when the request arrives; toUTCString drops the milliseconds, so the date is 1-2 s ahead.
      replies: (_request, index) => (index === 0 ? { status: 429, headers: { "Retry-After": new Date(Date.now() + 2_000).toUTCString() } } : 200),
    });
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport(), policy: POLICY });

    expect(report).toMatchObject({ outcome: "delivered", attempts: 2 });
    const retry = events.find((event) => event.type === "retry");
    expect(retry?.type === "retry" ? retry.delayMs : 0).toBeGreaterThan(900);
    // Over a second by the date; 900 leaves room for a timer that fires a millisecond early.
    expect(gapMs(server, 0, 1)).toBeGreaterThanOrEqual(900);
  });

  it("T24 waits the backoff (never less) when a Retry-After date is in the past", async () => {
    const server = await harness.server({ replies: [{ status: 503, headers: { "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT" } }, 200] });
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport(), policy: POLICY });

    expect(report).toMatchObject({ outcome: "delivered", attempts: 2 });
    const retry = events.find((event) => event.type === "retry") as { delayMs: number };
    expect(retry.delayMs).toBeLessThan(POLICY.baseMs);
  });
});
