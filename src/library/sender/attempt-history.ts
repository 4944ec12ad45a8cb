import type { DeliveryEvent } from "../../core/deliver.js";
import type { AttemptOutcome } from "../../core/retry-policy.js";

/** One attempt's answer or error, and how long the sender then waited before the next. */
export interface AttemptRecord {
  url: string;
  attempt: number;
  outcome: AttemptOutcome;
  durationMs: number;
  retryInMs?: number | undefined;
}

/** Adds a delivery event to a send's history: each answer, and the wait that followed it. */
export function recordAttempt(history: AttemptRecord[], event: DeliveryEvent): void {
  if (event.type === "response") history.push({ url: event.url, attempt: event.attempt, outcome: event.outcome, durationMs: event.durationMs });
  else if (event.type === "retry") {
    const last = history.findLast((entry) => entry.url === event.url && entry.attempt === event.attempt);
    if (last !== undefined) last.retryInMs = event.delayMs;
  }
}
