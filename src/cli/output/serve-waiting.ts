import type { Clock } from "../../core/clock.js";
import { formatDurationMs } from "../../core/duration.js";
import type { WaitReason } from "../../engine/deliverer.js";
import type { Output } from "./render.js";

/** How often the lines come, unless the io's timings say otherwise. */
const EVERY_MS = 5_000;

/**
 * wh serve's word while deliveries fail, without --verbose (which shows every attempt): every few
 * seconds, only while deliveries wait, one line per URL ("12 deliveries waiting on http://…: HTTP
 * 500 database is down; next attempt in 8.0s; 352 accepted events not yet delivered in all"), and
 * once nothing waits on a URL that delivered meanwhile, "http://… is answering again: 12
 * delivered". "In all": the store's backlog, every accepted event not yet ended, those waiting
 * and those queued behind them, of every source (a delivery to several URLs waits on each, so the
 * queue is not the backlog less the waits). The spool knows it at once, Redis not: left out there.
 * With several URLs waiting, it is said once, on a line of its own. The URLs are redacted and the
 * answers neutralised already (core/deliver's labels and describeOutcome).
 */
export class WaitingLines {
  /** The URLs named as failing, and what was delivered to each since. */
  private readonly failing = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly output: Output,
    private readonly clock: Clock,
  ) {}

  /** A delivery to `url` (as reports name it) succeeded. */
  delivered(url: string): void {
    const count = this.failing.get(url);
    if (count !== undefined) this.failing.set(url, count + 1);
  }

  /** `backlog`: the events accepted and not yet ended, when the store can tell. */
  start(serve: { waiting(): WaitReason[]; backlog(): number | undefined }): void {
    this.timer = setInterval(() => this.tell(serve.waiting(), serve.backlog()), this.output.timings.progressEveryMs ?? EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tell(reasons: readonly WaitReason[], backlog: number | undefined): void {
    const now = this.clock.now();
    const named = new Set<string>();
    const inAll = backlog === undefined ? undefined : `${backlog} accepted event${backlog === 1 ? "" : "s"} not yet delivered in all`;
    for (const reason of reasons) {
      named.add(reason.url);
      if (!this.failing.has(reason.url)) this.failing.set(reason.url, 0);
      const inMs = reason.nextAttemptAtMs - now;
      const next = inMs > 0 ? `in ${formatDurationMs(inMs)}` : "now";
      const what = `${reason.waiting} deliver${reason.waiting === 1 ? "y" : "ies"} waiting`;
      const total = reasons.length === 1 && inAll !== undefined ? `; ${inAll}` : "";
      this.output.log(this.output.err.yellow(`${what} on ${reason.url}: ${reason.problem}; next attempt ${next}${total}`));
    }
    if (reasons.length > 1 && inAll !== undefined) this.output.log(this.output.err.yellow(inAll));
    for (const [url, delivered] of this.failing) {
      if (named.has(url)) continue;
      this.failing.delete(url);
      // Waits that ended in failures (the window closed) have their own lines: no "answering" then.
      if (delivered > 0) this.output.log(this.output.err.green(`${url} is answering again: ${delivered} delivered`));
    }
  }
}
