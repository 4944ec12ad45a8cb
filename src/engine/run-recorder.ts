import type { OutcomeCounts } from "../adapters/journal.js";
import type { DeliveryReport } from "../core/deliver.js";
import type { DeadLetterRecord } from "../core/dead-letter.js";
import { deliveryRecord } from "../core/delivery-record.js";
import { countSkip, type SkipCounts } from "../core/message/skip.js";
import { OutputWriteError } from "../core/errors.js";
import { type DeadLetterLog, type DeliveryJob, type FinishedLog, type JobOutcome, skipKindOf } from "./delivery-job.js";
import { FailureStreak, type FailureStop } from "./failure-streak.js";

/** `filtered` and `unmatched` (SkipCounts) are of the `skipped`. */
export interface RunCounts extends SkipCounts {
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

export interface RecorderOptions {
  journal: FinishedLog | undefined;
  deadLetter: DeadLetterLog | undefined;
  /** With --resume: what the earlier parts of the run came to, from the journal. */
  earlier?: OutcomeCounts | undefined;
  /** Stop after this many identical final failures in a row (--max-failures); 0 or absent: never. */
  maxFailures?: number | undefined;
  onOutcome?: ((job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined) => void) | undefined;
}

/**
 * Records how each job of a run ended: counts it, dead-letters the invalid and failed ones and
 * journals it, flushing both logs once per turn of the event loop. A failed or invalid job is
 * journaled only once its dead-letter record is written whole, and the record is kept only once
 * its job is journaled. The first output file that cannot be written is kept, and so is a streak
 * of identical failures or invalid lines that reached the limit: either one stops the run (`stopRun`).
 */
export class RunRecorder {
  readonly counts: RunCounts;
  writeError: OutputWriteError | undefined;
  private readonly streak: FailureStreak;
  private deadJobs: { job: DeliveryJob; outcome: "invalid" | "failed" }[] = [];
  private flushScheduled = false;

  constructor(
    private readonly options: RecorderOptions,
    private readonly stopRun: () => void,
  ) {
    this.counts = {
      delivered: 0,
      skipped: 0,
      filtered: 0,
      unmatched: 0,
      invalid: 0,
      failed: 0,
      unfinished: 0,
      dryRun: 0,
      alreadyFinished: sumCounts(options.earlier),
    };
    this.streak = new FailureStreak(options.maxFailures);
  }

  /** Set when identical failures, or invalid lines, in a row reached --max-failures and stopped the run. */
  get stoppedByFailures(): FailureStop | undefined {
    return this.streak.stop;
  }

  /** A line was read that is not invalid: it ends a streak of invalid lines, which are counted in the input's order. */
  readValid(): void {
    this.streak.readValid();
  }

  /** A job ended: `interrupted` (or anything, once a write error stops the run) is not recorded, and sent again on resume. */
  finish(job: DeliveryJob, outcome: JobOutcome, report?: DeliveryReport, reason?: string, subscriptions?: string[]): void {
    const { journal, deadLetter, onOutcome } = this.options;
    if (outcome === "interrupted" || !this.canRecord(outcome)) {
      // Not recorded as finished: sent again on resume.
      onOutcome?.(job, "interrupted", report, reason);
      this.counts.unfinished += 1;
      journal?.markUnfinished?.(job.number);
      return;
    }
    onOutcome?.(job, outcome, report, reason);
    if (outcome === "dry-run") {
      this.counts.dryRun += 1;
      return;
    }
    this.counts[outcome] += 1;
    const skip = outcome === "skipped" ? skipKindOf(job) : undefined;
    countSkip(this.counts, skip);
    if (this.streak.note(job, outcome, report, reason)) this.stopRun();
    if ((outcome === "invalid" || outcome === "failed") && deadLetter !== undefined) {
      deadLetter.append(`${JSON.stringify(deadLetterRecord(job, outcome, reason ?? "", report, subscriptions))}\n`);
      this.deadJobs.push({ job, outcome });
    } else journal?.markFinished(job, outcome, skip);
    if (!this.flushScheduled && (journal !== undefined || deadLetter !== undefined)) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * Journals what ended without a dead letter, writes the dead letters, then journals the jobs
   * whose records were written whole. A dead letter the journal could not record is taken out of
   * the file again: --resume sends its line again, and would dead-letter it a second time.
   */
  flush(): void {
    this.flushScheduled = false;
    this.flushJournal();
    if (this.deadJobs.length === 0) return;
    const pending = this.deadJobs;
    this.deadJobs = [];
    const journaled = this.recordDeadLetters(pending);
    // The rest are not finished: they are reported again on resume.
    for (const { outcome } of pending.slice(journaled)) {
      this.counts[outcome] -= 1;
      this.counts.unfinished += 1;
    }
  }

  /** Writes the dead letters of `pending` and journals their jobs; returns how many of them (in order) both files hold. */
  private recordDeadLetters(pending: readonly { job: DeliveryJob; outcome: "invalid" | "failed" }[]): number {
    const { journal, deadLetter } = this.options;
    if (deadLetter === undefined) return 0;
    return recordDeadLetters(
      deadLetter,
      journal,
      (whole) => {
        for (const { job, outcome } of pending.slice(0, whole)) journal?.markFinished(job, outcome);
      },
      (error) => this.recordWriteError(error),
    );
  }

  /** Whether the journal wrote all that was marked. */
  private flushJournal(): boolean {
    try {
      this.options.journal?.flush();
      return true;
    } catch (error) {
      this.recordWriteError(error);
      return false;
    }
  }

  private recordWriteError(error: unknown): void {
    if (!(error instanceof OutputWriteError)) throw error;
    this.writeError ??= error;
    this.stopRun();
  }

  /** After a write error, only what needs no dead-letter record can still be recorded. */
  private canRecord(outcome: JobOutcome): boolean {
    return (
      this.writeError === undefined ||
      (this.options.journal?.broken === undefined && (outcome === "delivered" || outcome === "skipped" || outcome === "dry-run"))
    );
  }
}

/**
 * Writes the dead letters appended to `deadLetter`, then journals (`mark`) the first `whole` of
 * their lines: those whose records were written whole (all of them, unless the disk refused). A
 * record whose line the journal could not take is taken out of the file again: --resume sends
 * its line again, and would dead-letter it a second time. Returns how many lines (in order) both
 * files hold; write errors go to `failed`. Each replay worker's recorder does so itself, under
 * the lock the workers share (engine/run-files.ts, attachRunFiles).
 */
function recordDeadLetters(
  deadLetter: DeadLetterLog,
  journal: FinishedLog | undefined,
  mark: (whole: number) => void,
  failed: (error: unknown) => void,
): number {
  const before = deadLetter.count;
  try {
    deadLetter.flush();
  } catch (error) {
    failed(error);
  }
  const whole = deadLetter.count - before;
  const journaledBefore = journal?.count;
  mark(whole);
  try {
    journal?.flush();
  } catch (error) {
    failed(error);
    if (journaledBefore === undefined) return whole;
    const journaled = Math.max(0, (journal?.count ?? journaledBefore) - journaledBefore);
    try {
      deadLetter.takeBack?.(whole - journaled);
    } catch (takeBackError) {
      failed(takeBackError);
    }
    return journaled;
  }
  return whole;
}

function sumCounts(counts: OutcomeCounts | undefined): number {
  return counts === undefined ? 0 : counts.delivered + counts.skipped + counts.invalid + counts.failed;
}

function deadLetterRecord(
  job: DeliveryJob,
  outcome: "invalid" | "failed",
  reason: string,
  report: DeliveryReport | undefined,
  subscriptions: string[] | undefined,
): DeadLetterRecord {
  return {
    line: job.number,
    outcome,
    reason,
    ...(report === undefined ? {} : { urls: deliveryRecord(report).urls as unknown[] }),
    ...(subscriptions === undefined ? {} : { subscriptions }),
    at: new Date().toISOString(),
    original: job.original,
  };
}
