import { MAX_TIMER_MS, requireArgument } from "../core/arguments.js";
import type { Clock } from "../core/clock.js";

/** The real clock: sleeps are timers that an abort signal ends early. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      requireArgument(typeof ms === "number" && ms >= 0 && ms <= MAX_TIMER_MS, "ms", `a number from 0 to ${MAX_TIMER_MS}`, ms);
      if (signal?.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
    }),
};
