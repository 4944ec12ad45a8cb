import type { InputLine } from "../adapters/line-reader.js";
import type { DeadLetterLog, DeliveryJob, FinishedLog } from "./delivery-job.js";
import type { RunOptions, RunProgress, RunSummary } from "./run-deliveries.js";
import type { ParentPort, RelayedOutcome, ToWorker, WorkerProgress } from "./worker-protocol.js";

/**
 * A worker's side of the run: the lines the parent hands it (each batch taken says so, making
 * room for the next), the run's journal and dead-letter file, which it writes itself (shared by
 * the parent: see attachRunFiles), and the run's options that report to the parent: the outcomes
 * to show (the failures; every one when `everyOutcome`, for --json), the progress, and "retry now".
 */
export class WorkerSide {
  readonly stopped = new AbortController();
  private readonly queue: InputLine[][] = [];
  private ended = false;
  private wake: (() => void) | undefined;
  private outcomes: RelayedOutcome[] = [];
  private retryNow: () => number = () => 0;

  constructor(
    private readonly port: ParentPort,
    /** The run's files; none for a run that keeps none. */
    private readonly files: { journal: FinishedLog; deadLetter: DeadLetterLog | undefined } | undefined,
    private readonly everyOutcome: boolean,
    /** How long a request is on the wire before the progress counts it as hanging. */
    private readonly hangingAfterMs: number,
  ) {
    port.on("message", (message) => this.receive(message));
  }

  /** How "retry now" reaches this worker's deliveries. */
  onRetryNow(retryNow: () => number): void {
    this.retryNow = retryNow;
  }

  /** The lines the parent hands this worker, until it says there are no more or the run stops. */
  async *lines(): AsyncGenerator<InputLine[]> {
    for (;;) {
      const batch = this.queue.shift();
      if (batch !== undefined) {
        this.port.postMessage({ t: "took" });
        yield batch;
      } else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** The run's options that write its files or report to the parent (runDeliveries'). */
  runOptions(): Pick<RunOptions, "journal" | "deadLetter" | "signal" | "stopInput" | "onOutcome" | "startProgress"> {
    return {
      journal: this.files?.journal,
      deadLetter: this.files?.deadLetter,
      signal: this.stopped.signal,
      stopInput: () => this.end(),
      onOutcome: (job, outcome, report, reason) => {
        if (this.everyOutcome || outcome === "invalid" || outcome === "failed") this.relay({ job: withoutBody(job), outcome, report, reason });
      },
      startProgress: (progress) => {
        const post = (): void => this.port.postMessage({ t: "progress", progress: workerProgress(progress(), this.hangingAfterMs) });
        const timer = setInterval(post, PROGRESS_EVERY_MS);
        return {
          stop: () => {
            clearInterval(timer);
            post();
          },
        };
      },
    };
  }

  /** The run ended: what is left to show, then its summary (a write error as its message: an error's class does not cross threads). */
  done(summary: RunSummary): void {
    this.flushOutcomes();
    this.port.postMessage({ t: "done", summary: { ...summary, writeError: undefined }, writeError: summary.writeError?.message });
  }

  private receive(message: ToWorker): void {
    if (message.t === "lines") this.queue.push(message.lines);
    else if (message.t === "end") this.end();
    else if (message.t === "stop") this.stopped.abort();
    else this.port.postMessage({ t: "retried", count: this.retryNow() });
    this.wake?.();
    this.wake = undefined;
  }

  private end(): void {
    this.ended = true;
    this.wake?.();
    this.wake = undefined;
  }

  /** Outcomes go to the parent once per turn of the event loop, as the recorder writes its files. */
  private relay(outcome: RelayedOutcome): void {
    if (this.outcomes.length === 0) setImmediate(() => this.flushOutcomes());
    this.outcomes.push(outcome);
  }

  private flushOutcomes(): void {
    if (this.outcomes.length > 0) this.port.postMessage({ t: "outcomes", outcomes: this.outcomes });
    this.outcomes = [];
  }
}

/** How often a worker tells the parent its progress: well within the display's cadence. */
const PROGRESS_EVERY_MS = 100;

function workerProgress(progress: RunProgress, hangingAfterMs: number): WorkerProgress {
  return {
    counts: { ...progress.counts },
    read: progress.read,
    retrying: progress.retrying,
    waiting: progress.waiting,
    inFlight: progress.inFlight?.count ?? 0,
    hanging: progress.inFlight?.olderThan(hangingAfterMs) ?? 0,
  };
}

/** A job as the parent's display reads it: what it says of the message, not its body or its routes (functions). */
function withoutBody(job: DeliveryJob): DeliveryJob {
  const { prepared } = job;
  if (!prepared.ok) return { number: job.number, original: job.original, prepared };
  const { type, messageId, userKey, enabled, skipReason, skipKind } = prepared.message;
  return { number: job.number, original: job.original, prepared: { ok: true, message: { type, body: "", messageId, userKey, enabled, skipReason, skipKind } } };
}
