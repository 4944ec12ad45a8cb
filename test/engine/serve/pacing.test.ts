import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { EventStore } from "../../../src/engine/serve/event-store.js";
import { Pacer } from "../../../src/engine/serve/pacing.js";

/** A store whose forwarder lag starts at `from` and falls by `perMs` each millisecond (never below 0). */
function lagging(from: number, perMs: number): EventStore {
  const start = Date.now();
  return { lag: () => Math.max(0, from - perMs * (Date.now() - start)) } as unknown as EventStore;
}

/** An event loop busy `share` of the time: its busy and idle milliseconds so far. */
function loopBusy(share: number): () => { active: number; idle: number } {
  const start = Date.now();
  return () => ({ active: share * (Date.now() - start), idle: (1 - share) * (Date.now() - start) });
}

/** How long (fake) milliseconds the pacer made one request wait. */
async function waited(pacer: Pacer): Promise<number> {
  const start = Date.now();
  let done = false;
  const pacing = pacer.admit().then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  while (!done && Date.now() - start < 5_000) await vi.advanceTimersByTimeAsync(1);
  await pacing;
  return Date.now() - start;
}

describe("pacing a request while the forwarder is behind", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits while the forwarder catches up with the CPU busy, until it is under 2,000 events behind", async () => {
    // 3,000 behind, delivering 10 an ms while requests wait: under 2,000 in 100 ms.
    const ms = await waited(new Pacer(lagging(3_000, 10), () => true, loopBusy(1)));
    expect(ms).toBeGreaterThanOrEqual(100);
    expect(ms).toBeLessThan(110);
  });

  it("with the CPU busy, waits at most a second, caught up or not", async () => {
    const ms = await waited(new Pacer(lagging(50_000, 1), () => true, loopBusy(0.9)));
    expect(ms).toBeGreaterThanOrEqual(1_000);
    expect(ms).toBeLessThan(1_010);
  });

  it("does not wait while the forwarder is under 2,000 behind, nor while deliveries wait to retry", async () => {
    expect(await waited(new Pacer(lagging(1_500, 0), () => true, loopBusy(1)))).toBe(0);
    expect(await waited(new Pacer(lagging(50_000, 0), () => false, loopBusy(1)))).toBe(0);
  });

  it("a forwarder held back by a slow webhook, the CPU idle meanwhile: the request waits one judging window, not the whole second", async () => {
    // 80 events a second delivered (32 in flight, 400 ms each): the loop busy 1% of the time.
    const ms = await waited(new Pacer(lagging(3_000, 0.08), () => true, loopBusy(0.01)));
    expect(ms).toBeGreaterThanOrEqual(50);
    expect(ms).toBeLessThan(60);
  });

  it("once one request finds the CPU idle, those of the next second do not wait; then it judges again", async () => {
    const pacer = new Pacer(lagging(10_000, 0), () => true, loopBusy(0.2));
    expect(await waited(pacer)).toBeGreaterThanOrEqual(50);
    expect(await waited(pacer)).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await waited(pacer)).toBeGreaterThanOrEqual(50);
  });
});
