import { performance } from "node:perf_hooks";
import type { EventStore } from "./event-store.js";

/** Accepted events a forwarder may lag behind while its webhook keeps up, before accepting waits for it. */
const MAX_LAG = 2_000;
/** The longest a request waits for the forwarder: past it, it is accepted all the same. */
const MAX_PACE_MS = 1_000;
/** How long a request waits before it judges, and judges again, whether the CPU is busy delivering. */
const PROGRESS_WINDOW_MS = 50;
/**
 * The share of a window the event loop must be busy for a request to wait on: a forwarder held by
 * the CPU keeps it busy (all of it, on this project's 2-core machine), one held by a slow webhook
 * not (a 400 ms webhook, 32 deliveries at a time: under 1%).
 */
const BUSY_SHARE = 0.5;

/**
 * Pacing: while the webhook keeps up (nothing waits to retry) but its forwarder falls behind what
 * is accepted, a request waits for the forwarder to catch up, for at most MAX_PACE_MS. On one
 * core, accepting at full speed would otherwise starve the deliveries (3% of what was accepted
 * was delivered meanwhile) and only grow the backlog. While deliveries fail, the spool takes
 * everything: that is what it is for.
 *
 * A forwarder held back by its webhook, not by the CPU (a webhook that answers slowly, every
 * delivery slot taken), does not catch up however long requests wait: each request waited the whole
 * second for nothing, and an SDK that posts one batch at a time (analytics-python) was held to 100
 * events a second, its own queue filling (and dropping) meanwhile. What tells the two apart is the
 * CPU while requests wait: busy delivering, or idle. So a request waits on only while the event loop
 * was busy for at least BUSY_SHARE of each PROGRESS_WINDOW_MS; once a request finds it idle, the
 * requests of the next MAX_PACE_MS do not wait at all, and the spool takes the events, as it does
 * while deliveries fail.
 */
export class Pacer {
  /** Until when requests do not wait: the forwarder was last found held back by its webhook. */
  private skipUntil = 0;

  constructor(
    private readonly store: EventStore,
    private readonly keepingUp: () => boolean,
    /** The event loop's time busy and idle so far (ms): performance.eventLoopUtilization(). */
    private readonly loopTime: () => { active: number; idle: number } = () => performance.eventLoopUtilization(),
  ) {}

  /** Resolves when the request may be taken on. */
  async admit(): Promise<void> {
    if (Date.now() < this.skipUntil) return;
    if (!(await this.waitForForwarder())) this.skipUntil = Date.now() + MAX_PACE_MS;
  }

  /** Waits while the forwarder is behind and the CPU busy; false when it stopped waiting because the CPU was idle. */
  private async waitForForwarder(): Promise<boolean> {
    // Most requests find the forwarder level: they read no clock of the event loop.
    if (!this.behind()) return true;
    const until = Date.now() + MAX_PACE_MS;
    let since = { at: Date.now(), loop: this.loopTime() };
    do {
      const now = Date.now();
      if (now >= until) return true;
      if (now - since.at >= PROGRESS_WINDOW_MS) {
        const loop = this.loopTime();
        const active = loop.active - since.loop.active;
        if (active < BUSY_SHARE * (active + loop.idle - since.loop.idle)) return false;
        since = { at: now, loop };
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    } while (this.behind());
    return true;
  }

  /** The forwarder is over MAX_LAG events behind while its webhook keeps up. */
  private behind(): boolean {
    return (this.store.lag() ?? 0) > MAX_LAG && this.keepingUp();
  }
}
