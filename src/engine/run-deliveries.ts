import { setMaxListeners } from "node:events";
import { limitHeapGrowth } from "../adapters/v8-flags.js";
import { systemClock } from "../adapters/system-clock.js";
import { emptyCounts, type OutcomeCounts } from "../adapters/journal.js";
import type { DeliveryEvent, DeliveryReport } from "../core/deliver.js";
import type { PrepareResult } from "../core/message/prepare.js";
import type { DeadLetterLog, DeliveryJob, FinishedLog, JobOutcome } from "./delivery-job.js";
import { OrderedPool } from "../core/ordered-pool.js";
import { deliveryRecord, describeTargets } from "../core/delivery-record.js";
import { OutputWriteError } from "../core/errors.js";
import type { Sender, WaitReason } from "./deliverer.js";

/** The live counts of a run, for a progress display. */
export interface RunProgress {
  counts: Readonly<RunCounts>;
  /** Deliveries now waiting to retry a URL. */
  retrying: number;
  /** Why they wait: each URL's last retryable answer and when its retries end. */
  waiting: WaitReason[];
  /** How much of the input is done, 0 to 1, when that can be known. */
  fraction: number | undefined;
  startedAt: number;
}

export interface RunCounts {
  delivered: number;
  skipped: number;
  invalid: number;
  failed: number;
  /** Jobs started but not finished when the run stopped (Ctrl-C): not journaled, sent again on resume. */
  unfinished: number;
  dryRun: number;
  /** Lines an earlier part of the run finished (with --resume). */
  alreadyFinished: number;
}

export interface RunOptions {
  /** Absent in a dry run. */
  /** Where each event goes; absent in a dry run. */
  sender: Sender | undefined;
  concurrency: number;
  /** Keep each user's events in input order. */
  ordered: boolean;
  /** Events per request: more than 1 sends Actions batches (JSON arrays). Default 1. */
  batchSize?: number | undefined;
  /** Requests started per second at most. */
  ratePerSecond: number | undefined;
  journal: FinishedLog | undefined;
  deadLetter: DeadLetterLog | undefined;
  /** The first Ctrl-C: stop reading, let deliveries in flight finish for up to GRACE_MS. */
  signal: AbortSignal;
  /** Ends the input when the run stops early (reading may wait on an open stdin forever). */
  stopInput?: () => void;
  /** The number of jobs, when known in advance (a sync): progress counts ended jobs against it. */
  total?: number | undefined;
  /** Otherwise, the share of the input read so far (a file's bytes), 0 to 1. */
  fractionRead?: (() => number | undefined) | undefined;
  /** With --resume: what the earlier parts of the run came to, from the journal. */
  earlier?: OutcomeCounts | undefined;
  /** Called once per job when its outcome is known (before the journal records it). */
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined) => void;
  /** Sees every attempt and answer of every job (--verbose); absent, nothing is built for it. */
  onDeliveryEvent?: ((job: DeliveryJob, event: DeliveryEvent) => void) | undefined;
  /** A dry run (no sender) hands each request here instead of sending it. */
  onDryRun?: (job: DeliveryJob, request: { body: string; signedText?: string | undefined; dropped?: readonly string[] | undefined }) => void;
  /** Starts a progress display over the live counts; stopped when the run ends. */
  startProgress?: (progress: () => RunProgress) => { stop(): void };
}

export interface RunSummary extends RunCounts {
  /** What the earlier parts of a resumed run came to (all zero for a fresh run). */
  earlier: OutcomeCounts;
  /** The output file that could not be written, which stopped the run. */
  writeError: OutputWriteError | undefined;
  elapsedMs: number;
  eventsPerSecond: number;
}

/** Jobs prepared and held beyond the concurrency, waiting for a slot. */
const READ_AHEAD = 256;

/** How long the first Ctrl-C lets deliveries in flight finish. */
const GRACE_MS = 5_000;

/**
 * Delivers a stream of jobs (in batches, as they are read) with bounded concurrency, each user's
 * events in order, recording every job's end (delivered, skipped, invalid or failed) in the
 * dead-letter file and the journal.
 * Shared by `wh replay`, the demo and the audience and trait syncs. It prints nothing: what
 * happens reaches the caller through onOutcome, onDryRun and startProgress.
 */
export async function runDeliveries(jobs: AsyncIterable<readonly DeliveryJob[]>, options: RunOptions): Promise<RunSummary> {
  const { journal, deadLetter } = options;
  limitHeapGrowth();
  const startedAt = Date.now();
  const counts: RunCounts = { delivered: 0, skipped: 0, invalid: 0, failed: 0, unfinished: 0, dryRun: 0, alreadyFinished: sumCounts(options.earlier) };
  // Held beyond those running: READ_AHEAD jobs, enough for the reader's next chunk and for ordered
  // runs to find other users' events. 4x the concurrency (2,048 jobs at --concurrency 512) was
  // slower there: 8,962-9,088 events/s against 9,147-9,154 (bench/in-flight.js, cold receiver).
  const pool = new OrderedPool({ concurrency: options.concurrency, ordered: options.ordered, maxQueued: options.concurrency + READ_AHEAD });
  const hardStop = new AbortController();
  // Every delivery in flight listens to this one signal.
  setMaxListeners(0, hardStop.signal);
  // The run stops reading on Ctrl-C (or SIGTERM, SIGHUP) and when an output file cannot be written.
  const stop = new AbortController();
  let writeError: OutputWriteError | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  const onStop = (): void => {
    // Jobs read but not started are simply not reached, like the lines after them.
    pool.cancelWaiting();
    graceTimer = setTimeout(() => hardStop.abort(), GRACE_MS);
    options.stopInput?.();
  };
  stop.signal.addEventListener("abort", onStop, { once: true });
  const onInterrupt = (): void => stop.abort();
  options.signal.addEventListener("abort", onInterrupt, { once: true });
  if (options.signal.aborted) stop.abort();

  // A failed or invalid job is journaled only once its dead-letter record is written whole.
  let deadJobs: { job: DeliveryJob; outcome: "invalid" | "failed" }[] = [];
  let flushScheduled = false;
  const recordWriteError = (error: unknown): void => {
    if (!(error instanceof OutputWriteError)) throw error;
    writeError ??= error;
    stop.abort();
  };
  const flush = (): void => {
    flushScheduled = false;
    if (deadJobs.length > 0) {
      const pending = deadJobs;
      deadJobs = [];
      const before = deadLetter?.count ?? 0;
      try {
        deadLetter?.flush();
      } catch (error) {
        recordWriteError(error);
      }
      // Only the lines whose records were written whole (all of them, unless the disk refused).
      const whole = (deadLetter?.count ?? before) - before;
      for (const { job, outcome } of pending.slice(0, whole)) journal?.markFinished(job.number, job.original, outcome);
      // The rest are not finished: they are reported again on resume.
      for (const { outcome } of pending.slice(whole)) {
        counts[outcome] -= 1;
        counts.unfinished += 1;
      }
    }
    try {
      journal?.flush();
    } catch (error) {
      recordWriteError(error);
    }
  };
  /** After a write error, only what needs no dead-letter record can still be recorded. */
  const canRecord = (outcome: JobOutcome): boolean =>
    writeError === undefined || (journal?.broken === undefined && (outcome === "delivered" || outcome === "skipped" || outcome === "dry-run"));
  const finish = (job: DeliveryJob, outcome: JobOutcome, report?: DeliveryReport, reason?: string): void => {
    if (outcome === "interrupted" || !canRecord(outcome)) {
      // Not recorded as finished: sent again on resume.
      options.onOutcome?.(job, "interrupted", report, reason);
      counts.unfinished += 1;
      journal?.markUnfinished?.(job.number);
      return;
    }
    options.onOutcome?.(job, outcome, report, reason);
    if (outcome === "dry-run") {
      counts.dryRun += 1;
      return;
    }
    counts[outcome] += 1;
    if ((outcome === "invalid" || outcome === "failed") && deadLetter !== undefined) {
      deadLetter.append(`${JSON.stringify(deadLetterRecord(job, outcome, reason ?? "", report))}\n`);
      deadJobs.push({ job, outcome });
    } else journal?.markFinished(job.number, job.original, outcome);
    if (!flushScheduled && (journal !== undefined || deadLetter !== undefined)) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const fraction = (): number | undefined => {
    if (options.total !== undefined) return options.total === 0 ? 1 : (counts.delivered + counts.failed + counts.invalid + counts.skipped + counts.dryRun) / options.total;
    return options.fractionRead?.();
  };
  let nextStartAt = Date.now();
  /** Waits for the next request's turn under --rate; false when the run stopped meanwhile. */
  const waitForRate = async (ratePerSecond: number): Promise<boolean> => {
    const waitMs = nextStartAt - Date.now();
    if (waitMs > 0) await systemClock.sleep(waitMs, stop.signal);
    nextStartAt = Math.max(nextStartAt, Date.now() - 1_000) + 1_000 / ratePerSecond;
    return !stop.signal.aborted;
  };
  const batchSize = options.batchSize ?? 1;
  const pendingBatch: DeliveryJob[] = [];
  /**
   * An Actions batch: one request whose body is the events' JSON array, signed over the first
   * event as Segment signs batches. It starts only once every earlier event of each of its users
   * has ended; each event ends with the batch (a failed batch dead-letters every event, each with
   * its own line). False when the run stopped meanwhile.
   */
  const sendBatch = async (jobs: DeliveryJob[]): Promise<boolean> => {
    const messages = jobs.map((job) => (job.prepared as Extract<PrepareResult, { ok: true }>).message);
    const body = `[${messages.map((message) => message.body).join(",")}]`;
    const signedText = messages[0]?.body;
    const first = jobs[0] as DeliveryJob;
    if (options.sender === undefined) {
      options.onDryRun?.(first, { body, signedText });
      for (const job of jobs) finish(job, "dry-run");
      return true;
    }
    if (options.ratePerSecond !== undefined && !(await waitForRate(options.ratePerSecond))) return false;
    const sender = options.sender;
    const keys = options.ordered ? [...new Set(messages.map((message) => message.userKey).filter((key): key is string => key !== undefined))] : undefined;
    const submitted = pool.submit(keys, async () => {
      const onEvent = options.onDeliveryEvent;
      const report = await sendUntilCut(hardStop.signal, jobs, (signal) => sender.send(body, signal, onEvent === undefined ? undefined : (event) => onEvent(first, event), signedText));
      const outcome = report.outcome === "delivered" ? "delivered" : report.outcome === "failed" ? "failed" : "interrupted";
      const reason = outcome === "failed" ? `in a batch of ${jobs.length}: ${describeTargets(report)}` : undefined;
      for (const job of jobs) finish(job, outcome, report, reason);
    });
    if (typeof submitted !== "boolean") await submitted;
    return true;
  };

  const progress = options.startProgress?.(() => ({ counts, retrying: options.sender?.retrying ?? 0, waiting: options.sender?.waiting() ?? [], fraction: fraction(), startedAt }));
  try {
    reading: for await (const batch of jobs) {
      for (const job of batch) {
        if (stop.signal.aborted) break reading;
        const { prepared } = job;
        if (!prepared.ok) {
          finish(job, "invalid", undefined, prepared.error);
          continue;
        }
        if (!prepared.message.enabled) {
          finish(job, "skipped", undefined, prepared.message.skipReason ?? "integrations turn the Webhooks destination off");
          continue;
        }
        if (batchSize > 1) {
          pendingBatch.push(job);
          if (pendingBatch.length >= batchSize && !(await sendBatch(pendingBatch.splice(0)))) break reading;
          continue;
        }
        if (options.sender === undefined) {
          options.onDryRun?.(job, prepared.message);
          finish(job, "dry-run");
          continue;
        }
        if (options.ratePerSecond !== undefined && !(await waitForRate(options.ratePerSecond))) break reading;
        const sender = options.sender;
        const submitted = pool.submit(options.ordered ? prepared.message.userKey : undefined, async () => {
          const onEvent = options.onDeliveryEvent;
          const report = await sendUntilCut(hardStop.signal, [job], (signal) => sender.send(prepared.message.body, signal, onEvent === undefined ? undefined : (event) => onEvent(job, event)));
          if (report.outcome === "delivered") finish(job, "delivered", report);
          else if (report.outcome === "failed") finish(job, "failed", report, describeTargets(report));
          else finish(job, "interrupted", report);
        });
        if (typeof submitted !== "boolean") await submitted;
      }
      // A batch never waits for more input than was read together (stdin may pause for long).
      if (pendingBatch.length > 0 && !(await sendBatch(pendingBatch.splice(0)))) break reading;
    }
    await pool.drain();
  } finally {
    options.signal.removeEventListener("abort", onInterrupt);
    stop.signal.removeEventListener("abort", onStop);
    clearTimeout(graceTimer);
    progress?.stop();
    flush();
  }
  const elapsedMs = Date.now() - startedAt;
  const ended = counts.delivered + counts.failed;
  return { ...counts, earlier: options.earlier ?? emptyCounts(), writeError, elapsedMs, eventsPerSecond: elapsedMs > 0 ? (ended * 1_000) / elapsedMs : ended };
}

/**
 * Sends with a signal that `stop` aborts, and so do the jobs' own signals when they have them.
 * (Not AbortSignal.any: on Node 20 every signal it makes stays reachable from the long-lived
 * `stop`, 7 MB per 100,000 events.)
 */
async function sendUntilCut(stop: AbortSignal, jobs: readonly DeliveryJob[], send: (signal: AbortSignal) => Promise<DeliveryReport>): Promise<DeliveryReport> {
  let sources: Set<AbortSignal> | undefined;
  for (const job of jobs) if (job.signal !== undefined) (sources ??= new Set([stop])).add(job.signal);
  if (sources === undefined) return send(stop);
  const cut = new AbortController();
  const abort = (): void => cut.abort();
  for (const source of sources) {
    if (source.aborted) cut.abort();
    source.addEventListener("abort", abort, { once: true });
  }
  try {
    return await send(cut.signal);
  } finally {
    for (const source of sources) source.removeEventListener("abort", abort);
  }
}

function sumCounts(counts: OutcomeCounts | undefined): number {
  return counts === undefined ? 0 : counts.delivered + counts.skipped + counts.invalid + counts.failed;
}

/** What the whole run came to: this part and the earlier parts of a resumed run. */
export function wholeRunCounts(summary: RunSummary): OutcomeCounts {
  const { earlier } = summary;
  return {
    delivered: earlier.delivered + summary.delivered,
    skipped: earlier.skipped + summary.skipped,
    invalid: earlier.invalid + summary.invalid,
    failed: earlier.failed + summary.failed,
  };
}

/**
 * The exit code of a run, earlier parts of a resumed run included: 74 when an output file could
 * not be written, 130 after Ctrl-C, 1 when anything was invalid or failed, else 0.
 */
export function runExitCode(summary: RunSummary, interrupted: boolean): number {
  if (summary.writeError !== undefined) return 74;
  if (interrupted) return 130;
  const whole = wholeRunCounts(summary);
  return whole.invalid + whole.failed > 0 ? 1 : 0;
}

function deadLetterRecord(job: DeliveryJob, outcome: "invalid" | "failed", reason: string, report: DeliveryReport | undefined): Record<string, unknown> {
  return {
    line: job.number,
    outcome,
    reason,
    ...(report === undefined ? {} : { urls: deliveryRecord(report).urls }),
    at: new Date().toISOString(),
    original: job.original,
  };
}
