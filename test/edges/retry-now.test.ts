import { afterEach, describe, expect, it } from "vitest";
import type { Destination } from "../../src/config/resolve.js";
import { createDeliverer, type Deliverer } from "../../src/engine/deliverer.js";
import { RetryWaits } from "../../src/engine/retry-waits.js";
import { createHarness, targetOf } from "../integration/support.js";
import { heldClock } from "../helpers/virtual-clock.js";

// Retry now's bookkeeping at its edges: several deliveries waiting on one URL are counted
// together, with the soonest of their next attempts; another URL's apart; and once a retry's wait
// has begun, a later sleep that no retry announced (a client's flush timer) is neither counted nor cut.

const START = "2026-11-21T09:30:00.000Z";
const body = (id: string) => JSON.stringify({ type: "track", userId: "u1", event: "Signed Up", messageId: id });

describe("retry now's bookkeeping", () => {
  const harness = createHarness();
  const deliverers: Deliverer[] = [];
  afterEach(async () => {
    await Promise.all(deliverers.splice(0).map((deliverer) => deliverer.close()));
    await harness.close();
  });

  it("counts the waits per URL, each URL with the soonest of its next attempts, and retries them all at once", async () => {
    const first = await harness.server({ replies: [503, 503, 200, 200] });
    const second = await harness.server({ replies: [503, 200] });
    const clock = heldClock(START);
    const destination = (url: string): Destination => ({
      source: undefined,
      writeKey: undefined,
      enabled: true,
      targets: [targetOf(url)],
      sharedSecret: "s3cret",
      secretOrigin: undefined,
      scheme: "segment",
      mode: "classic",
      method: "POST",
      batchSize: 1,
      timeoutMs: 5_000,
    });
    const deliverer = await createDeliverer(
      { configPath: undefined, destinations: [], caFiles: [], cwd: process.cwd(), timeoutMs: 5_000, retryWindowMs: 4 * 3_600_000, maxAttempts: 5 },
      { clock },
    );
    deliverers.push(deliverer);
    const deliveries: Promise<unknown>[] = [];
    // One at a time, so that the sleeps asked for are, in order, the first URL's two and the second's.
    for (const [index, url] of [first.url, first.url, second.url].entries()) {
      deliveries.push(deliverer.deliver(body(`m-${index}`), destination(url), { signal: new AbortController().signal }));
      await clock.whenPending(index + 1);
    }
    const [a, b, c] = clock.slept as [number, number, number];
    expect(a).not.toBe(b);
    expect(deliverer.to(destination(first.url)).waiting()).toEqual([
      { url: first.url, problem: "HTTP 503", giveUpAtMs: expect.any(Number), nextAttemptAtMs: Date.parse(START) + Math.min(a, b), waiting: 2 },
      { url: second.url, problem: "HTTP 503", giveUpAtMs: expect.any(Number), nextAttemptAtMs: Date.parse(START) + c, waiting: 1 },
    ]);
    expect(deliverer.to(destination(first.url)).retrying).toBe(3);
    expect(deliverer.retryNow()).toBe(3);
    for (const report of await Promise.all(deliveries)) expect(report).toMatchObject({ outcome: "delivered", attempts: 2 });
    expect(deliverer.to(destination(first.url)).waiting()).toEqual([]);
  });

  it("counts and cuts no sleep that no retry announced, after a retry's wait has begun", async () => {
    const clock = heldClock(START);
    const waits = new RetryWaits(clock);
    waits.announce("http://127.0.0.1:1/v1/batch", "HTTP 503", Date.parse(START) + 60_000);
    const retry = waits.clock.sleep(500);
    await clock.whenPending(1);
    // The client's flush timer, after the retry's wait began.
    const flushTimer = waits.clock.sleep(1_000);
    await clock.whenPending(2);
    expect(waits.count).toBe(1);
    expect(waits.reasons()).toMatchObject([{ waiting: 1, nextAttemptAtMs: Date.parse(START) + 500 }]);
    expect(waits.retryNow()).toBe(1);
    await retry;
    expect(clock.pending).toBe(1);
    expect(waits.retryNow()).toBe(0);
    clock.elapse();
    await flushTimer;
  });
});
