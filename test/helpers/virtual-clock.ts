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

/**
 * A virtual clock whose sleeps wait, without real time passing, until their signal aborts (a stop,
 * or "retry now") or `elapse()` ends them all (time then moves on by the longest). `whenPending(n)`
 * resolves once n sleeps are waiting.
 */
export interface HeldClock extends VirtualClock {
  readonly pending: number;
  whenPending(count: number): Promise<void>;
  elapse(): void;
}

export function heldClock(startIso: string): HeldClock {
  let nowMs = Date.parse(startIso);
  const slept: number[] = [];
  const held = new Map<() => void, number>();
  const watchers = new Set<() => void>();
  const changed = (): void => {
    for (const watcher of [...watchers]) watcher();
  };
  return {
    now: () => nowMs,
    slept,
    get pending() {
      return held.size;
    },
    sleep(ms, signal) {
      if (signal?.aborted) return Promise.resolve();
      slept.push(ms);
      return new Promise<void>((resolve) => {
        const end = (): void => {
          held.delete(end);
          signal?.removeEventListener("abort", end);
          resolve();
        };
        held.set(end, ms);
        signal?.addEventListener("abort", end, { once: true });
        changed();
      });
    },
    whenPending: (count) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (held.size < count) return;
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      }),
    elapse() {
      nowMs += Math.max(0, ...held.values());
      for (const end of [...held.keys()]) end();
    },
  };
}
