import { limitHeapGrowth } from "../adapters/v8-flags.js";
import { systemClock } from "../adapters/system-clock.js";
import { emptyCounts, type OutcomeCounts } from "../adapters/journal.js";
import { actionsBatch } from "../core/batch.js";
import type { DeliveryEvent, DeliveryReport } from "../core/deliver.js";
import type { PreparedMessage } from "../core/message/prepare.js";
import { OrderedPool } from "../core/ordered-pool.js";
import { describeTargets } from "../core/delivery-record.js";
import type { OutputWriteError } from "../core/errors.js";
import type { DeadLetterLog, DeliveryJob, FinishedLog, JobOutcome } from "./delivery-job.js";
import type { InFlight } from "./attempts-in-flight.js";
import type { Sender, WaitReason } from "./deliverer.js";
import type { FailureStop } from "./failure-streak.js";
import { RunRecorder, type RunCounts } from "./run-recorder.js";
import { RunStop, sendUntilCut } from "./run-stop.js";
import { type RoutedRunContext, sendRouted } from "./routed-run.js";
import type { SubscriptionRequest } from "../core/destination/route.js";

/** The live counts of a run, for a progress display. */
export interface RunProgress {
  counts: Readonly<RunCounts>;
  /** Jobs read from the input by this part of the run, finished or not. */
  read: number;
  /** The number of jobs, when known in advance (a sync). */
  total: number | undefined;
  /** The share of the input read so far (a file's bytes), 0 to 1, when that can be known. */
  fractionRead: number | undefined;
  /** Deliveries now waiting to retry a URL. */
  retrying: number;
  /** Why they wait: each URL's last retryable answer and when its retries end. */
  waiting: WaitReason[];
  /** The requests on the wire, when the sender can tell. */
  inFlight: InFlight | undefined;
  startedAt: number;
}

export interface RunOptions {
  /** Where each event goes; absent in a dry run. */
  sender: Sender | undefined;
  concurrency: number;
  /** Keep each user's events in input order. */
  ordered: boolean;
  /** Jobs held beyond the concurrency, waiting for a slot (default READ_AHEAD). */
  readAhead?: number | undefined;
  /** Events per request: more than 1 sends Actions batches (JSON arrays). Default 1. */
  batchSize?: number | undefined;
  /** Requests started per second at most. */
  ratePerSecond: number | undefined;
  journal: FinishedLog | undefined;
  deadLetter: DeadLetterLog | undefined;
  /** The first Ctrl-C: stop reading, let deliveries in flight finish for up to graceMs. */
  signal: AbortSignal;
  /** How long deliveries in flight may finish once the run stops (default GRACE_MS). */
  graceMs?: number | undefined;
  /** Ends the input when the run stops early (reading may wait on an open stdin forever). */
  stopInput?: () => void;
  /** The number of jobs, when known in advance (a sync): progress counts ended jobs against it. */
  total?: number | undefined;
  /** Otherwise, the share of the input read so far (a file's bytes), 0 to 1. */
  fractionRead?: (() => number | undefined) | undefined;
  /** With --resume: what the earlier parts of the run came to, from the journal. */
  earlier?: OutcomeCounts | undefined;
  /** Stop reading after this many identical final failures, or invalid lines, in a row (--max-failures); 0 or absent: never. */
  maxFailures?: number | undefined;
  /** Called once per job when its outcome is known (before the journal records it). */
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined) => void;
  /**
   * Sees every attempt and answer of every job (--verbose); absent, nothing is built for it.
   * `request`: the subscription request it is of, when events are routed to subscriptions.
   */
  onDeliveryEvent?: ((job: DeliveryJob, event: DeliveryEvent, request?: SubscriptionRequest) => void) | undefined;
  /** A dry run (no sender) hands each request here instead of sending it. */
  onDryRun?: (
    job: DeliveryJob,
    request: { body: string; signedText?: string | undefined; dropped?: readonly string[] | undefined; request?: SubscriptionRequest | undefined },
  ) => void;
  /** Starts a progress display over the live counts; stopped when the run ends. */
  startProgress?: (progress: () => RunProgress) => { stop(): void };
  /** Called once after the last job has ended: a display shows what it held back. */
  onRunEnd?: () => void;
}

export interface RunSummary extends RunCounts {
  /** What the earlier parts of a resumed run came to (all zero for a fresh run). */
  earlier: OutcomeCounts;
  /** The output file that could not be written, which stopped the run. */
  writeError: OutputWriteError | undefined;
  /** Set when the run stopped reading after --max-failures identical failures, or invalid lines, in a row. */
  stoppedByFailures?: FailureStop | undefined;
  elapsedMs: number;
  eventsPerSecond: number;
}

/** Jobs prepared and held beyond the concurrency, waiting for a slot. */
const READ_AHEAD = 256;

/**
 * Delivers a stream of jobs (in batches, as they are read) with bounded concurrency, each user's
 * events in order, recording every job's end (delivered, skipped, invalid or failed) in the
 * dead-letter file and the journal.
 * Shared by `wh replay`, the demo and the audience and trait syncs. It prints nothing: what
 * happens reaches the caller through onOutcome, onDryRun and startProgress.
 */
export async function runDeliveries(jobs: AsyncIterable<readonly DeliveryJob[]>, options: RunOptions): Promise<RunSummary> {
  limitHeapGrowth();
  return new DeliveryRun(options).run(jobs);
}

/** One run of runDeliveries: reading the jobs, starting their deliveries, and the summary. */
class DeliveryRun {
  private readonly startedAt = Date.now();
  private readonly recorder: RunRecorder;
  private readonly pool: OrderedPool;
  private readonly stop: RunStop;
  private readonly batchSize: number;
  private readonly pendingBatch: DeliveryJob[] = [];
  /** Events routed to subscriptions, held until the read's end: their batches are made of events read together. */
  private readonly routed: DeliveryJob[] = [];
  private nextStartAt: number;
  private jobsRead = 0;

  constructor(private readonly options: RunOptions) {
    this.recorder = new RunRecorder(options, () => this.stop.reading.abort());
    // Held beyond those running: READ_AHEAD jobs, enough for the reader's next chunk and for ordered
    // runs to find other users' events. 4x the concurrency (2,048 jobs at --concurrency 512) was
    // slower there: 8,962-9,088 events/s against 9,147-9,154 (bench/in-flight.js, cold receiver).
    this.pool = new OrderedPool({
      concurrency: options.concurrency,
      ordered: options.ordered,
      maxQueued: options.concurrency + (options.readAhead ?? READ_AHEAD),
    });
    // Jobs read but not started are simply not reached, like the lines after them.
    this.stop = new RunStop(
      options.signal,
      () => {
        this.pool.cancelWaiting();
        options.stopInput?.();
      },
      options.graceMs,
      options.sender?.inFlight,
    );
    this.batchSize = options.batchSize ?? 1;
    this.nextStartAt = Date.now();
  }

  async run(jobs: AsyncIterable<readonly DeliveryJob[]>): Promise<RunSummary> {
    const { options, recorder } = this;
    const progress = options.startProgress?.(() => ({
      counts: recorder.counts,
      read: this.jobsRead,
      total: options.total,
      fractionRead: options.fractionRead?.(),
      retrying: options.sender?.retrying ?? 0,
      waiting: options.sender?.waiting() ?? [],
      inFlight: options.sender?.inFlight,
      startedAt: this.startedAt,
    }));
    try {
      await this.read(jobs);
      await this.pool.drain();
    } finally {
      this.stop.dispose();
      progress?.stop();
      recorder.flush();
      options.onRunEnd?.();
    }
    const elapsedMs = Date.now() - this.startedAt;
    const ended = recorder.counts.delivered + recorder.counts.failed;
    return {
      ...recorder.counts,
      earlier: options.earlier ?? emptyCounts(),
      writeError: recorder.writeError,
      stoppedByFailures: recorder.stoppedByFailures,
      elapsedMs,
      eventsPerSecond: elapsedMs > 0 ? (ended * 1_000) / elapsedMs : ended,
    };
  }

  /** Reads until the input ends or the run stops. */
  private async read(jobs: AsyncIterable<readonly DeliveryJob[]>): Promise<void> {
    for await (const batch of jobs) {
      for (const job of batch) {
        // A promise only when the job must wait (for room in the pool, or its turn under --rate).
        const taken = this.take(job);
        if (!(typeof taken === "boolean" ? taken : await taken)) return;
      }
      // A batch never waits for more input than was read together (stdin may pause for long).
      if (this.pendingBatch.length > 0 && !(await this.sendBatch(this.pendingBatch.splice(0)))) return;
      if (this.routed.length > 0 && !(await sendRouted(this.routed.splice(0), this.routedContext()))) return;
    }
  }

  /** Ends, holds for a batch, or starts one job; false when the run stopped. */
  private take(job: DeliveryJob): boolean | Promise<boolean> {
    const { options, recorder } = this;
    if (this.stop.reading.signal.aborted) return false;
    this.jobsRead += 1;
    const { prepared } = job;
    if (!prepared.ok) {
      recorder.finish(job, "invalid", undefined, prepared.error);
      return true;
    }
    recorder.readValid();
    if (!prepared.message.enabled) {
      recorder.finish(job, "skipped", undefined, prepared.message.skipReason);
      return true;
    }
    if (prepared.message.routes !== undefined) {
      this.routed.push(job);
      return true;
    }
    if (this.batchSize > 1) {
      this.pendingBatch.push(job);
      if (this.pendingBatch.length < this.batchSize) return true;
      return this.sendBatch(this.pendingBatch.splice(0));
    }
    if (options.sender === undefined) {
      options.onDryRun?.(job, prepared.message);
      recorder.finish(job, "dry-run");
      return true;
    }
    if (options.ratePerSecond !== undefined) return this.sendAtRate(options.ratePerSecond, options.sender, job, prepared.message);
    return this.send(options.sender, job, prepared.message);
  }

  /** Starts one job's delivery at its turn under --rate; false when the run stopped meanwhile. */
  private async sendAtRate(ratePerSecond: number, sender: Sender, job: DeliveryJob, message: PreparedMessage): Promise<boolean> {
    return (await this.waitForRate(ratePerSecond)) && (await this.send(sender, job, message));
  }

  /** Starts one job's delivery, waiting for room in the pool: a promise only when it must. */
  private send(sender: Sender, job: DeliveryJob, message: PreparedMessage): true | Promise<true> {
    const { options, recorder } = this;
    const submitted = this.pool.submit(options.ordered ? message.userKey : undefined, async () => {
      const onEvent = options.onDeliveryEvent;
      const forJob = onEvent === undefined ? undefined : (event: DeliveryEvent) => onEvent(job, event);
      // A replay's job has no signal of its own: the run's cut is its signal, without a list and a closure per event.
      const report = await (job.signal === undefined
        ? sender.send(message.body, this.stop.cut, forJob)
        : sendUntilCut(this.stop.cut, [job], (signal) => sender.send(message.body, signal, forJob)));
      if (report.outcome === "delivered") recorder.finish(job, "delivered", report);
      else if (report.outcome === "failed") recorder.finish(job, "failed", report, describeTargets(report));
      else recorder.finish(job, "interrupted", report);
    });
    return typeof submitted === "boolean" ? true : submitted.then(() => true);
  }

  /**
   * An Actions batch: one request whose body is the events' JSON array, signed over the first
   * event as Segment signs batches. It starts only once every earlier event of each of its users
   * has ended; each event ends with the batch (a failed batch dead-letters every event, each with
   * its own line). False when the run stopped meanwhile.
   */
  private async sendBatch(jobs: DeliveryJob[]): Promise<boolean> {
    const { options, recorder } = this;
    const messages = jobs.map((job) => (job.prepared as Extract<DeliveryJob["prepared"], { ok: true }>).message);
    const { body, signedText } = actionsBatch(messages.map((message) => message.body));
    const first = jobs[0] as DeliveryJob;
    if (options.sender === undefined) {
      options.onDryRun?.(first, { body, signedText });
      for (const job of jobs) recorder.finish(job, "dry-run");
      return true;
    }
    if (options.ratePerSecond !== undefined && !(await this.waitForRate(options.ratePerSecond))) return false;
    const sender = options.sender;
    const keys = options.ordered ? [...new Set(messages.map((message) => message.userKey).filter((key): key is string => key !== undefined))] : undefined;
    const submitted = this.pool.submit(keys, async () => {
      const onEvent = options.onDeliveryEvent;
      const report = await sendUntilCut(this.stop.cut, jobs, (signal) =>
        sender.send(body, signal, onEvent === undefined ? undefined : (event) => onEvent(first, event), signedText),
      );
      const outcome = report.outcome === "delivered" ? "delivered" : report.outcome === "failed" ? "failed" : "interrupted";
      const reason = outcome === "failed" ? `in a batch of ${jobs.length}: ${describeTargets(report)}` : undefined;
      for (const job of jobs) recorder.finish(job, outcome, report, reason);
    });
    if (typeof submitted !== "boolean") await submitted;
    return true;
  }

  private routedContext(): RoutedRunContext {
    const { options } = this;
    const rate = options.ratePerSecond;
    return {
      options,
      pool: this.pool,
      recorder: this.recorder,
      cut: this.stop.cut,
      waitForRate: async () => (rate === undefined ? !this.stop.reading.signal.aborted : this.waitForRate(rate)),
    };
  }

  /** Waits for the next request's turn under --rate; false when the run stopped meanwhile. */
  private async waitForRate(ratePerSecond: number): Promise<boolean> {
    const waitMs = this.nextStartAt - Date.now();
    if (waitMs > 0) await systemClock.sleep(waitMs, this.stop.reading.signal);
    this.nextStartAt = Math.max(this.nextStartAt, Date.now() - 1_000) + 1_000 / ratePerSecond;
    return !this.stop.reading.signal.aborted;
  }
}
