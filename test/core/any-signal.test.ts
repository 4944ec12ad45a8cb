import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { fanOutOf, withAnySignal } from "../../src/core/any-signal.js";

describe("withAnySignal", () => {
  it("aborts when any of the signals does, and lets go of them once settled", async () => {
    const stop = new AbortController();
    const own = new AbortController();
    const seen = await withAnySignal([stop.signal, own.signal], async (signal) => {
      expect(signal.aborted).toBe(false);
      own.abort();
      return signal.aborted;
    });
    expect(seen).toBe(true);
    expect(stop.signal.aborted).toBe(false);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });

  it("starts aborted when one of the signals already is, and passes a single signal through as it is", async () => {
    const done = AbortSignal.abort();
    expect(await withAnySignal([new AbortController().signal, done], async (signal) => signal.aborted)).toBe(true);
    const only = new AbortController().signal;
    expect(await withAnySignal([only], async (signal) => signal)).toBe(only);
  });
});

describe("fanOutOf", () => {
  it("holds one listener on the shared signal however many uses wait on it, and aborts each of them with it", async () => {
    const stop = new AbortController();
    const waiting = Array.from({ length: 50 }, () =>
      fanOutOf(stop.signal).run((signal) => new Promise<boolean>((resolve) => signal.addEventListener("abort", () => resolve(signal.aborted)))),
    );
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(1);
    stop.abort();
    expect(await Promise.all(waiting)).toEqual(Array(50).fill(true));
    expect(await fanOutOf(stop.signal).run(async (signal) => signal.aborted)).toBe(true);
  });
});
