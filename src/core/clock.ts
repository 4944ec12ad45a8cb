import type { MessageStamps } from "./message/prepare.js";

/** Time as a parameter, so retry schedules are tested without waiting. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The stamps a message gets from a clock: its time, and a fresh id from `newId`. */
export function clockStamps(clock: Clock, newId: () => string): MessageStamps {
  return { now: () => new Date(clock.now()), newId };
}
