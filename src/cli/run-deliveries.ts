import { setMaxListeners } from "node:events";
import type { AppendFile } from "../adapters/append-file.js";
import { limitHeapGrowth } from "../adapters/heap-growth.js";
import { systemClock } from "../adapters/system-clock.js";
import type { Journal } from "../adapters/journal.js";
import type { Destination } from "../config/resolve.js";
import type { DeliveryReport } from "../core/deliver.js";
import { formatDurationMs } from "../core/duration.js";
import type { PrepareResult } from "../core/message/prepare.js";
import { OrderedPool } from "../core/ordered-pool.js";
import type { Deliverer } from "./deliverer.js";
import { printDryRun } from "./dry-run.js";
import { deliveryRecord, describeTargets, type Output } from "./render.js";

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

export interface RunOptions {
  output: Output;
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
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined) => void;
}

export interface RunSummary {
  delivered: number;
  skipped: number;
  invalid: number;
  failed: number;
  /** Jobs not finished because of Ctrl-C: not journaled, sent again on resume. */
  unfinished: number;
  dryRun: number;
  /** Lines the journal already recorded as finished (with --resume). */
  alreadyFinished: number;
  elapsedMs: number;
  eventsPerSecond: number;
}

const PROGRESS_EVERY_MS = 5_000;
/** How long the first Ctrl-C lets deliveries in flight finish. */
const GRACE_MS = 5_000;

/**
 * Delivers a stream of jobs (in batches, as they are read) with bounded concurrency, each user's
 * events in order, recording every job's end (delivered, skipped, invalid or failed) in the
 * dead-letter file and the journal.
 * Shared by `wh replay`, the demo and the audience and trait syncs.
 */
export async function runDeliveries(jobs: AsyncIterable<readonly DeliveryJob[]>, options: RunOptions): Promise<RunSummary> {
  const { output, journal, deadLetter } = options;
  limitHeapGrowth();
  const startedAt = Date.now();
  const counts = { delivered: 0, skipped: 0, invalid: 0, failed: 0, unfinished: 0, dryRun: 0, alreadyFinished: 0 };
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
    options.onOutcome?.(job, outcome, report);
    if (outcome === "interrupted") {
      counts.unfinished += 1;
      return;
    }
    if (outcome === "dry-run") counts.dryRun += 1;
    else counts[outcome] += 1;
    if (outcome === "invalid" || outcome === "failed") {
      deadLetter?.append(`${JSON.stringify(deadLetterRecord(job, outcome, reason ?? "", report))}\n`);
      output.log(output.err.red(`${job.label ?? `line ${job.number}`}: ${outcome}: ${reason}`));
    }
    if (outcome !== "dry-run") journal?.markFinished(job.number);
    if (!flushScheduled && (journal !== undefined || deadLetter !== undefined)) {
      flushScheduled = true;
      setImmediate(flush);
    }
    if (!output.json) return;
    const message = job.prepared.ok ? job.prepared.message : undefined;
    output.record({
      ...(job.origin ?? { line: job.number }),
      outcome,
      ...(message === undefined ? {} : { type: message.type, messageId: message.messageId ?? null }),
      ...(reason === undefined ? {} : { reason }),
      ...(report === undefined ? {} : deliveryRecord(report)),
    });
  };

  const progress = startProgress(output, counts, () => options.deliverer?.retrying ?? 0, startedAt);
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
          printDryRun(output, prepared.message.body, options.destination, { line: job.number });
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
    progress.stop();
    flush();
  }
  const elapsedMs = Date.now() - startedAt;
  const ended = counts.delivered + counts.failed;
  return { ...counts, elapsedMs, eventsPerSecond: elapsedMs > 0 ? (ended * 1_000) / elapsedMs : ended };
}

/** The closing lines of a run: counts, time and rate, then any notes (dead letters, how to resume). */
export function printRunSummary(output: Output, summary: RunSummary, notes: Record<string, unknown>, lines: string[]): void {
  output.record({ summary: true, ...summary, ...notes });
  const c = output.out;
  const parts = [
    c.green(`${summary.delivered} delivered`),
    `${summary.skipped} skipped by integrations`,
    summary.invalid > 0 ? c.red(`${summary.invalid} invalid`) : "0 invalid",
    summary.failed > 0 ? c.red(`${summary.failed} failed`) : "0 failed",
  ];
  if (summary.dryRun > 0) parts.unshift(`${summary.dryRun} shown (dry run, nothing sent)`);
  if (summary.alreadyFinished > 0) parts.push(`${summary.alreadyFinished} already finished before`);
  if (summary.unfinished > 0) parts.push(c.yellow(`${summary.unfinished} not finished`));
  output.result(`${parts.join(", ")} in ${formatDurationMs(summary.elapsedMs)} (${Math.round(summary.eventsPerSecond)} events/s)`);
  for (const line of lines) output.result(line);
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

/** A spinner with the counts on a TTY; off a TTY, a line on stderr every few seconds at most. */
function startProgress(output: Output, counts: { delivered: number; failed: number; invalid: number }, retrying: () => number, startedAt: number): { stop(): void } {
  const describe = (): string => {
    const elapsedMs = Date.now() - startedAt;
    const rate = elapsedMs > 0 ? Math.round((counts.delivered * 1_000) / elapsedMs) : 0;
    return `sent ${counts.delivered} · retrying ${retrying()} · failed ${counts.failed} · invalid ${counts.invalid} · ${rate} events/s · ${formatDurationMs(elapsedMs)}`;
  };
  if (output.quiet) return { stop: () => undefined };
  const interactive = output.interactive;
  const timer = setInterval(() => (interactive ? void output.spin(describe()) : output.log(describe())), interactive ? 100 : PROGRESS_EVERY_MS);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      output.stopSpinner();
    },
  };
}
