import { setMaxListeners } from "node:events";
import type { AppendFile } from "../adapters/append-file.js";
import { limitHeapGrowth } from "../adapters/heap-growth.js";
import { systemClock } from "../adapters/system-clock.js";
import type { Journal } from "../adapters/journal.js";
import type { Destination } from "../config/resolve.js";
import type { DeliveryReport } from "../core/deliver.js";
import type { PrepareResult } from "../core/message/prepare.js";
import { OrderedPool } from "../core/ordered-pool.js";
import { deliveryRecord, describeTargets } from "../core/delivery-record.js";
import type { Deliverer } from "./deliverer.js";

/** One event to deliver: where it came from, and what preparing it gave. */
export interface DeliveryJob {
  /** The input line number (1-based). */
  number: number;
  /** The input line as read, kept for the dead-letter file. */
  original: string;
  prepared: PrepareResult;
  /** How log lines name the job; default `line N`. */
  label?: string;
  /** What --json records say of where the job came from; default `{ line: N }`. */
  origin?: Record<string, unknown>;
}

export type JobOutcome = "delivered" | "skipped" | "invalid" | "failed" | "interrupted" | "dry-run";

/** The live counts of a run, for a progress display. */
export interface RunProgress {
  counts: Readonly<RunCounts>;
  /** Deliveries now waiting to retry a URL. */
  retrying: number;
  startedAt: number;
}

export interface RunCounts {
  delivered: number;
  skipped: number;
  invalid: number;
  failed: number;
  /** Jobs not finished because of Ctrl-C: not journaled, sent again on resume. */
  unfinished: number;
  dryRun: number;
  /** Lines the journal already recorded as finished (with --resume). */
  alreadyFinished: number;
}

export interface RunOptions {
  /** Absent in a dry run. */
  deliverer: Deliverer | undefined;
  destination: Destination;
  concurrency: number;
  /** Keep each user's events in input order. */
  ordered: boolean;
  /** Events started per second at most. */
  ratePerSecond: number | undefined;
  journal: Journal | undefined;
  deadLetter: AppendFile | undefined;
  /** The first Ctrl-C: stop reading, let deliveries in flight finish for up to GRACE_MS. */
  signal: AbortSignal;
  /** Called once per job when its outcome is known (before the journal records it). */
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined) => void;
  /** A dry run (no deliverer) hands each event's body here instead of sending it. */
  onDryRun?: (job: DeliveryJob, body: string) => void;
  /** Starts a progress display over the live counts; stopped when the run ends. */
  startProgress?: (progress: () => RunProgress) => { stop(): void };
}

export interface RunSummary extends RunCounts {
  elapsedMs: number;
  eventsPerSecond: number;
}

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
  const counts: RunCounts = { delivered: 0, skipped: 0, invalid: 0, failed: 0, unfinished: 0, dryRun: 0, alreadyFinished: 0 };
  const pool = new OrderedPool({ concurrency: options.concurrency, ordered: options.ordered, maxQueued: Math.max(256, options.concurrency * 4) });
  const hardStop = new AbortController();
  // Every delivery in flight listens to this one signal.
  setMaxListeners(0, hardStop.signal);
  let graceTimer: NodeJS.Timeout | undefined;
  const onInterrupt = (): void => {
    counts.unfinished += pool.cancelWaiting();
    graceTimer = setTimeout(() => hardStop.abort(), GRACE_MS);
  };
  options.signal.addEventListener("abort", onInterrupt, { once: true });

  let flushScheduled = false;
  const flush = (): void => {
    flushScheduled = false;
    deadLetter?.flush();
    journal?.flush();
  };
  const finish = (job: DeliveryJob, outcome: JobOutcome, report?: DeliveryReport, reason?: string): void => {
    options.onOutcome?.(job, outcome, report, reason);
    if (outcome === "interrupted") {
      counts.unfinished += 1;
      return;
    }
    if (outcome === "dry-run") counts.dryRun += 1;
    else counts[outcome] += 1;
    if (outcome === "invalid" || outcome === "failed") deadLetter?.append(`${JSON.stringify(deadLetterRecord(job, outcome, reason ?? "", report))}\n`);
    if (outcome !== "dry-run") journal?.markFinished(job.number);
    if (!flushScheduled && (journal !== undefined || deadLetter !== undefined)) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const progress = options.startProgress?.(() => ({ counts, retrying: options.deliverer?.retrying ?? 0, startedAt }));
  let nextStartAt = Date.now();
  try {
    reading: for await (const batch of jobs) {
      for (const job of batch) {
        if (options.signal.aborted) break reading;
        if (journal?.isFinished(job.number)) {
          counts.alreadyFinished += 1;
          continue;
        }
        const { prepared } = job;
        if (!prepared.ok) {
          finish(job, "invalid", undefined, prepared.error);
          continue;
        }
        if (!prepared.message.enabled) {
          finish(job, "skipped", undefined, "integrations turn the Webhooks destination off");
          continue;
        }
        if (options.deliverer === undefined) {
          options.onDryRun?.(job, prepared.message.body);
          finish(job, "dry-run");
          continue;
        }
        if (options.ratePerSecond !== undefined) {
          const waitMs = nextStartAt - Date.now();
          if (waitMs > 0) await systemClock.sleep(waitMs, options.signal);
          nextStartAt = Math.max(nextStartAt, Date.now() - 1_000) + 1_000 / options.ratePerSecond;
          if (options.signal.aborted) break reading;
        }
        const deliverer = options.deliverer;
        const submitted = pool.submit(options.ordered ? prepared.message.userKey : undefined, async () => {
          const report = await deliverer.deliver(prepared.message.body, options.destination, { signal: hardStop.signal });
          if (report.outcome === "delivered") finish(job, "delivered", report);
          else if (report.outcome === "failed") finish(job, "failed", report, describeTargets(report));
          else finish(job, "interrupted", report);
        });
        if (!(typeof submitted === "boolean" ? submitted : await submitted)) counts.unfinished += 1;
      }
    }
    await pool.drain();
  } finally {
    options.signal.removeEventListener("abort", onInterrupt);
    clearTimeout(graceTimer);
    progress?.stop();
    flush();
  }
  const elapsedMs = Date.now() - startedAt;
  const ended = counts.delivered + counts.failed;
  return { ...counts, elapsedMs, eventsPerSecond: elapsedMs > 0 ? (ended * 1_000) / elapsedMs : ended };
}

/** The exit code of a run: 130 after Ctrl-C, 1 when anything was invalid or failed, else 0. */
export function runExitCode(summary: RunSummary, interrupted: boolean): number {
  if (interrupted) return 130;
  return summary.invalid > 0 || summary.failed > 0 ? 1 : 0;
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
