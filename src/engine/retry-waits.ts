import type { Clock } from "../core/clock.js";
import { type DeliveryEvent, describeOutcome } from "../core/deliver.js";

/** Why deliveries are waiting on one URL: its last retryable answer or error, how many wait, and when. */
export interface WaitReason {
  url: string;
  problem: string;
  giveUpAtMs: number;
  /** The soonest of the next attempts to this URL (on the deliverer's clock). */
  nextAttemptAtMs: number;
  /** Deliveries waiting to retry this URL (an Actions batch is one). */
  waiting: number;
}

/** One retry wait in progress: whose it is, until when, and what ends it early. */
interface Wait {
  url: string;
  untilMs: number;
  wake: AbortController;
}

/**
 * The deliveries of one deliverer waiting to retry: counted per URL for the progress lines, and
 * cut short all at once by "retry now". deliverMessage emits its "retry" event and starts the
 * wait it announces in the same synchronous step: `observe` notes the URL and `clock.sleep` takes
 * it, so a sleep that was not announced (none in the deliverer; a client's flush timer) is not a retry.
 */
export class RetryWaits {
  private readonly waits = new Set<Wait>();
  /** Each URL's last retryable answer, or that it has answered 2xx since (its other deliveries still wait). */
  private readonly problems = new Map<string, { problem: string; giveUpAtMs: number }>();
  private announced: string | undefined;
  /** The clock the deliveries wait by: the given one, with each retry wait counted and cuttable. */
  readonly clock: Clock;

  constructor(given: Clock) {
    this.clock = {
      now: () => given.now(),
      sleep: (ms, signal) => this.sleep(given, ms, signal),
    };
  }

  /** Sees every delivery event: a retry announces the wait that follows; a delivery says its URL answers again. */
  observe(event: DeliveryEvent): void {
    if (event.type === "retry") this.announce(event.url, describeOutcome(event.outcome), event.giveUpAtMs);
    const known = event.type === "delivered" ? this.problems.get(event.url) : undefined;
    // Deliveries that failed there before still wait out their backoff: the moment to retry now.
    if (known !== undefined) known.problem = "answering again";
  }

  /** A retry of `url` is about to wait (its next sleep on `clock`): why, and when its retries end. */
  announce(url: string, problem: string, giveUpAtMs: number): void {
    this.announced = url;
    this.problems.set(url, { problem, giveUpAtMs });
  }

  /** Deliveries now waiting to retry. */
  get count(): number {
    return this.waits.size;
  }

  /** Why deliveries wait, per URL that has any waiting. */
  reasons(): WaitReason[] {
    const byUrl = new Map<string, WaitReason>();
    for (const wait of this.waits) {
      const reason = byUrl.get(wait.url);
      if (reason !== undefined) {
        reason.waiting += 1;
        reason.nextAttemptAtMs = Math.min(reason.nextAttemptAtMs, wait.untilMs);
        continue;
      }
      const known = this.problems.get(wait.url) ?? { problem: "no answer", giveUpAtMs: wait.untilMs };
      byUrl.set(wait.url, { url: wait.url, ...known, nextAttemptAtMs: wait.untilMs, waiting: 1 });
    }
    return [...byUrl.values()];
  }

  /**
   * Ends every retry wait in progress: each delivery's next attempt starts now. That attempt is
   * the one the wait led to, not an extra one (the policy's attempt limit and window were checked
   * before the wait began), and if it fails the schedule goes on from it: the next wait is the
   * backoff of the attempt after it, as if the cut wait had run its course. A Retry-After the
   * receiver sent is overridden too: a person asked. Returns how many waits were cut short.
   */
  retryNow(): number {
    const cut = this.waits.size;
    for (const wait of this.waits) wait.wake.abort();
    // Gone at once, not when each sleeper resumes: asking twice in a row counts each wait once.
    this.waits.clear();
    return cut;
  }

  private async sleep(given: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const url = this.announced;
    this.announced = undefined;
    if (url === undefined) return given.sleep(ms, signal);
    const wait: Wait = { url, untilMs: given.now() + ms, wake: new AbortController() };
    // The run's own stop ends the wait as before; AbortSignal.any is avoided (see run-stop.ts).
    const stop = (): void => wait.wake.abort();
    if (signal?.aborted) return;
    signal?.addEventListener("abort", stop, { once: true });
    this.waits.add(wait);
    try {
      await given.sleep(ms, wait.wake.signal);
    } finally {
      this.waits.delete(wait);
      signal?.removeEventListener("abort", stop);
    }
  }
}
