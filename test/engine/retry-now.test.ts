import { afterEach, describe, expect, it } from "vitest";
import type { Destination } from "../../src/config/resolve.js";
import type { DeliveryEvent } from "../../src/core/deliver.js";
import { createDeliverer, type Deliverer } from "../../src/engine/deliverer.js";
import { RetryWaits } from "../../src/engine/retry-waits.js";
import { createHarness, targetOf } from "../integration/support.js";
import type { Reply } from "../helpers/recording-server.js";
import { heldClock } from "../helpers/virtual-clock.js";

const START = "2026-11-21T09:30:00.000Z";
const BODY = '{"type":"track","userId":"u1","event":"Signed Up","messageId":"m-1"}';

describe("retry now (Deliverer.retryNow)", () => {
  const harness = createHarness();
  const deliverers: Deliverer[] = [];
  afterEach(async () => {
    await Promise.all(deliverers.splice(0).map((deliverer) => deliverer.close()));
    await harness.close();
  });

  /** A deliverer on a held clock (its waits last until cut) to a real server answering `replies`. */
  async function delivererTo(replies: Reply[], maxAttempts = Number.POSITIVE_INFINITY) {
    const server = await harness.server({ replies });
    const clock = heldClock(START);
    const destination: Destination = {
      source: undefined,
      writeKey: undefined,
      enabled: true,
      targets: [targetOf(server.url)],
      sharedSecret: "s3cret",
      secretOrigin: undefined,
      scheme: "segment",
      mode: "classic",
      method: "POST",
      batchSize: 1,
      timeoutMs: 5_000,
    };
    const deliverer = await createDeliverer(
      { configPath: undefined, destinations: [destination], caFiles: [], cwd: process.cwd(), timeoutMs: 5_000, retryWindowMs: 4 * 3_600_000, maxAttempts },
      { clock },
    );
    deliverers.push(deliverer);
    return { server, clock, deliverer, destination };
  }

  /** The same, with one event's delivery started (its events kept). */
  async function setUp(replies: Reply[], maxAttempts = Number.POSITIVE_INFINITY) {
    const made = await delivererTo(replies, maxAttempts);
    const events: DeliveryEvent[] = [];
    const sender = made.deliverer.to(made.destination);
    const delivery = sender.send(BODY, new AbortController().signal, (event) => events.push(event));
    return { ...made, sender, events, delivery };
  }

  it("ends a wait at once: the next attempt starts without time passing, and is the attempt the wait led to", async () => {
    const { server, clock, sender, delivery } = await setUp([503, 200]);
    await clock.whenPending(1);
    expect(sender.retrying).toBe(1);
    const [reason] = sender.waiting();
    expect(reason).toMatchObject({ url: server.url, problem: "HTTP 503", waiting: 1, nextAttemptAtMs: Date.parse(START) + (clock.slept[0] as number) });
    expect(sender.retryNow()).toBe(1);
    // Asked again before the sleeper resumed: nothing is left to cut.
    expect(sender.retryNow()).toBe(0);
    const report = await delivery;
    expect(report).toMatchObject({ outcome: "delivered", attempts: 2 });
    expect(clock.now()).toBe(Date.parse(START));
    expect(server.requests).toHaveLength(2);
    expect(sender.retrying).toBe(0);
    expect(sender.waiting()).toEqual([]);
  });

  it("goes on with the schedule after a retry-now attempt fails: the next wait is the backoff after attempt 2", async () => {
    const { clock, sender, events, delivery } = await setUp([503, 503, 200]);
    await clock.whenPending(1);
    sender.retryNow();
    await clock.whenPending(1);
    expect(events.filter((event) => event.type === "retry").map((event) => event.type === "retry" && event.attempt)).toEqual([1, 2]);
    // Attempt 2's backoff ceiling is 2 s (full jitter under base × 2): the schedule did not restart.
    expect(clock.slept).toHaveLength(2);
    expect(clock.slept[1]).toBeLessThan(2_000);
    clock.elapse();
    expect(await delivery).toMatchObject({ outcome: "delivered", attempts: 3 });
  });

  it("makes no attempt beyond --max-attempts: the cut wait's attempt is the last one allowed", async () => {
    const { server, clock, sender, delivery } = await setUp([503], 2);
    await clock.whenPending(1);
    expect(sender.retryNow()).toBe(1);
    const report = await delivery;
    expect(report.outcome).toBe("failed");
    expect(report.attempts).toBe(2);
    expect(server.requests).toHaveLength(2);
    expect(clock.pending).toBe(0);
  });

  it("says the URL answers again while other deliveries still wait out their backoff", async () => {
    const { server, clock, deliverer, sender, delivery } = await setUp([503, 200]);
    await clock.whenPending(1);
    // The receiver has healed: a second event is delivered at once, the first still waits.
    expect((await sender.send(BODY, new AbortController().signal)).outcome).toBe("delivered");
    expect(sender.waiting()).toMatchObject([{ url: server.url, problem: "answering again", waiting: 1 }]);
    expect(deliverer.retryNow()).toBe(1);
    expect((await delivery).outcome).toBe("delivered");
  });

  it("returns 0 when nothing waits, and a stop still ends a wait as an abort", async () => {
    const { clock, deliverer, destination } = await delivererTo([503], 5);
    expect(deliverer.retryNow()).toBe(0);
    const stop = new AbortController();
    const delivery = deliverer.deliver(BODY, destination, { signal: stop.signal });
    await clock.whenPending(1);
    stop.abort();
    expect(await delivery).toMatchObject({ outcome: "aborted", attempts: 1 });
    expect(deliverer.retryNow()).toBe(0);
  });

  it("leaves sleeps no retry announced alone (a client's flush timer): not counted, not cut", async () => {
    const clock = heldClock(START);
    const waits = new RetryWaits(clock);
    const flushTimer = waits.clock.sleep(1_000);
    await clock.whenPending(1);
    expect(waits.count).toBe(0);
    expect(waits.retryNow()).toBe(0);
    waits.announce("http://127.0.0.1:1/v1/batch", "HTTP 503", Date.parse(START) + 60_000);
    const retry = waits.clock.sleep(500);
    await clock.whenPending(2);
    expect(waits.reasons()).toEqual([
      { url: "http://127.0.0.1:1/v1/batch", problem: "HTTP 503", giveUpAtMs: Date.parse(START) + 60_000, nextAttemptAtMs: Date.parse(START) + 500, waiting: 1 },
    ]);
    expect(waits.retryNow()).toBe(1);
    await retry;
    expect(clock.pending).toBe(1);
    clock.elapse();
    await flushTimer;
  });
});
