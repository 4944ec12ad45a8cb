import type { Clock } from "../../src/core/clock.js";

/** A clock that time passes on only when something sleeps on it: a sleep returns at once, that much later. */
export interface VirtualClock extends Clock {
  /** Every sleep asked for, in order (milliseconds). */
  readonly slept: number[];
}

export function virtualClock(startIso: string): VirtualClock {
  let nowMs = Date.parse(startIso);
  const slept: number[] = [];
  return {
    now: () => nowMs,
    async sleep(ms, signal) {
      if (signal?.aborted) return;
      slept.push(ms);
      nowMs += ms;
    },
    slept,
  };
}

/** messageIds `${prefix}-1`, `${prefix}-2`, … in the order they are asked for. */
export function numberedIds(prefix: string): () => string {
  let count = 0;
  return () => {
    count += 1;
    return `${prefix}-${count}`;
  };
}
