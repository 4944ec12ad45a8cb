import type { FinishedOutcome } from "../adapters/journal.js";
import type { PrepareResult } from "../core/message/prepare.js";
import type { SkipKind } from "../core/message/skip.js";
import type { OutputWriteError } from "../core/errors.js";

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
  /**
   * Aborted when the job may no longer be delivered (`wh serve`'s Redis partition lease ended):
   * its delivery is cut, or never starts, and it ends interrupted.
   */
  signal?: AbortSignal | undefined;
}

export type JobOutcome = "delivered" | "skipped" | "invalid" | "failed" | "interrupted" | "dry-run";

/** A skipped job's kind of skip (integrations, filtered, unmatched); undefined for any other. */
export function skipKindOf(job: DeliveryJob): SkipKind | undefined {
  return job.prepared.ok && !job.prepared.message.enabled ? job.prepared.message.skipKind : undefined;
}

/** Where the runner records each job that ended: a replay's journal, `wh serve`'s spool. */
export interface FinishedLog {
  /**
   * `skip`: a skipped job's kind, for a log that keeps it (a replay's journal). The job is given
   * whole: a log that keeps its line (a replay's journal, by its hash) reads `original`, which
   * wh serve's jobs serialise only when read; the spool and Redis need only its number.
   */
  markFinished(job: Pick<DeliveryJob, "number" | "original">, outcome: FinishedOutcome, skip?: SkipKind): void;
  /** A job that ended without an outcome (interrupted): not recorded, its event is still to deliver. */
  markUnfinished?(number: number): void;
  /** Writes what was marked; throws OutputWriteError when the disk refuses. */
  flush(): void;
  readonly broken: OutputWriteError | undefined;
  /** Records written whole so far: of a log whose flush can throw (a journal file), not of one that holds what it could not write (the spool). */
  readonly count?: number;
}

/** Where invalid and failed jobs go: a dead-letter file, or `wh serve`'s dead-letter stream. */
export interface DeadLetterLog {
  /** One record (a JSON line with its newline), buffered. */
  append(record: string): void;
  /** Writes what was appended; throws OutputWriteError when the disk refuses. */
  flush(): void;
  /** Records written whole so far. */
  readonly count: number;
  /** Takes the last `count` records of the last flush out again (a file's can be): their lines could not be journaled. */
  takeBack?(count: number): void;
}
