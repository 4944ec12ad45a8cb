import type { FinishedOutcome } from "../adapters/journal.js";
import type { InputLine } from "../adapters/line-reader.js";
import type { SkipKind } from "../core/message/skip.js";
import type { DeadLetterLog, DeliveryJob, FinishedLog } from "./delivery-job.js";
import type { RunOptions, RunProgress, RunSummary } from "./run-deliveries.js";
import type { FromWorker, ParentPort, RelayedOutcome, ToWorker, WorkerProgress } from "./worker-protocol.js";

/**
 * A worker's side of the run: the lines the parent hands it (each batch taken says so, making
 * room for the next), and the run's options that report to the parent: the journal and
 * dead-letter file (each flush one message, in the recorder's order), the outcomes to show (the
 * failures; every one when `everyOutcome`, for --json), the progress, and "retry now".
 */
export class WorkerSide {
  readonly stopped = new AbortController();
  private readonly queue: InputLine[][] = [];
  private ended = false;
  private wake: (() => void) | undefined;
  private outcomes: RelayedOutcome[] = [];
  private retryNow: () => number = () => 0;
  private writes = 0;
  /** The last write the parent has made (one Int32 over a SharedArrayBuffer), which write() waits for. */
  private readonly written: Int32Array;

  constructor(
    private readonly port: ParentPort,
    written: SharedArrayBuffer,
    private readonly everyOutcome: boolean,
    /** How long a request is on the wire before the progress counts it as hanging. */
    private readonly hangingAfterMs: number,
  ) {
    this.written = new Int32Array(written);
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

  /** The run's options that report to the parent (runDeliveries'). */
  runOptions(): Pick<RunOptions, "journal" | "deadLetter" | "signal" | "stopInput" | "onOutcome" | "startProgress"> {
    let marks: [number, FinishedOutcome, SkipKind | undefined][] = [];
    // Appended, then flushed: a flush's records go with the journal flush that follows it (the
    // recorder marks their lines in between), so the parent writes both together, as one recorder.
    let appended: string[] = [];
    let flushed: string[] = [];
    let written = 0;
    const journal: FinishedLog = {
      markFinished: (number, _original, outcome, skip) => void marks.push([number, outcome, skip]),
      flush: () => {
        if (marks.length > 0 || flushed.length > 0) this.write({ t: "journal", marks, records: flushed, seq: this.nextWrite() });
        marks = [];
        flushed = [];
      },
      broken: undefined,
    };
    const deadLetter: DeadLetterLog = {
      append: (record) => void appended.push(record),
      flush: () => {
        written += appended.length;
        flushed.push(...appended);
        appended = [];
      },
      get count() {
        return written;
      },
    };
    return {
      journal,
      deadLetter,
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

  /** The run ended: what is left to show, then its summary. */
  done(summary: RunSummary): void {
    this.flushOutcomes();
    this.port.postMessage({ t: "done", summary });
  }

  private nextWrite(): number {
    this.writes += 1;
    return this.writes;
  }

  /**
   * Has the parent write to the run's files, and waits until it has (Atomics.wait: this thread
   * stops meanwhile), as a write to the file would: a delivery's slot is taken again only once its
   * line is journaled, so after a kill -9 no more was sent unjournaled than one thread would have.
   */
  private write(message: Extract<FromWorker, { seq: number }>): void {
    this.port.postMessage(message);
    for (let seen = Atomics.load(this.written, 0); seen < message.seq; seen = Atomics.load(this.written, 0)) Atomics.wait(this.written, 0, seen);
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
