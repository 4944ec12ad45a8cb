import type { EventStore } from "./event-store.js";

/** Accepted events a forwarder may lag behind while its webhook keeps up, before accepting waits for it. */
const MAX_LAG = 2_000;
/** The longest a request waits for the forwarder: past it, it is accepted all the same. */
const MAX_PACE_MS = 1_000;

/**
 * Pacing: while the webhook keeps up (nothing waits to retry) but its forwarder falls behind what
 * is accepted, a request waits for the forwarder to catch up, for at most MAX_PACE_MS. On one
 * core, accepting at full speed would otherwise starve the deliveries (3% of what was accepted
 * was delivered meanwhile) and only grow the backlog. While deliveries fail, the spool takes
 * everything: that is what it is for.
 */
export async function paced(store: EventStore, keepingUp: () => boolean): Promise<void> {
  const until = Date.now() + MAX_PACE_MS;
  while ((store.lag() ?? 0) > MAX_LAG && keepingUp() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
}
