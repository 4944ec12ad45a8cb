import { setMaxListeners } from "node:events";
import { withAnySignal } from "../core/any-signal.js";
import type { DeliveryReport } from "../core/deliver.js";
import type { InFlight } from "./attempts-in-flight.js";
import type { DeliveryJob } from "./delivery-job.js";

/** How long the first Ctrl-C lets deliveries in flight finish, unless the run says otherwise (and wh serve's requests being received). */
export const GRACE_MS = 5_000;

/**
 * How a run stops: on the run's signal (the first Ctrl-C, SIGTERM, SIGHUP) or when an output
 * file cannot be written, it stops reading (`reading`), and the grace period later cuts the deliveries
 * still in flight (`cut`). When the run can tell which requests are on the wire (`inFlight`), the cut
 * comes as soon as none is: a delivery only waiting to retry has nothing to finish, and a person
 * who pressed Ctrl-C should not wait 5 s for it. It stays unfinished, sent again on resume.
 */
export class RunStop {
  /** Aborted when the run stops reading. */
  readonly reading = new AbortController();
  /** Aborted the grace period after that: every delivery in flight listens to it. */
  private readonly hardStop = new AbortController();
  private graceTimer: NodeJS.Timeout | undefined;
  private stopListening: (() => void) | undefined;
  private readonly onStop = (): void => {
    this.graceTimer = setTimeout(() => this.hardStop.abort(), this.graceMs);
    this.stopped();
    if (this.inFlight === undefined) return;
    if (this.inFlight.count === 0) this.hardStop.abort();
    else this.stopListening = this.inFlight.whenNone(() => this.hardStop.abort());
  };
  private readonly onInterrupt = (): void => this.reading.abort();

  constructor(
    private readonly signal: AbortSignal,
    /** What else stopping does (not start what waits, end the input): called once. */
    private readonly stopped: () => void,
    private readonly graceMs: number = GRACE_MS,
    private readonly inFlight?: InFlight,
  ) {
    // Every delivery in flight listens to this one signal.
    setMaxListeners(0, this.hardStop.signal);
    this.reading.signal.addEventListener("abort", this.onStop, { once: true });
    signal.addEventListener("abort", this.onInterrupt, { once: true });
    if (signal.aborted) this.reading.abort();
  }

  get cut(): AbortSignal {
    return this.hardStop.signal;
  }

  /** The run has ended: the listeners go, and the grace timer with them. */
  dispose(): void {
    this.signal.removeEventListener("abort", this.onInterrupt);
    this.reading.signal.removeEventListener("abort", this.onStop);
    clearTimeout(this.graceTimer);
    this.stopListening?.();
  }
}

/**
 * Sends with a signal that `stop` aborts, and so do the jobs' own signals when they have them.
 * Not async: a replay's jobs have no signals of their own, and their send's promise is handed on
 * as it is, without one more promise and turn per event.
 */
export function sendUntilCut(stop: AbortSignal, jobs: readonly DeliveryJob[], send: (signal: AbortSignal) => Promise<DeliveryReport>): Promise<DeliveryReport> {
  let sources: Set<AbortSignal> | undefined;
  for (const job of jobs) {
    if (job.signal === undefined) continue;
    sources ??= new Set([stop]);
    sources.add(job.signal);
  }
  return sources === undefined ? send(stop) : withAnySignal([...sources], send);
}
