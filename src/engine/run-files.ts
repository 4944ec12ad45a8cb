import { createHash, type Hash } from "node:crypto";
import { rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { AppendFile, type SharedAppendFile } from "../adapters/append-file.js";
import { Journal, type JournalHeader, JournalRecords, type JournalState, type OutcomeCounts } from "../adapters/journal.js";
import { readLineBatches, type InputLine } from "../adapters/line-reader.js";
import { keptFile } from "../adapters/output-file.js";
import { TurnLock } from "../adapters/turn-lock.js";
import { UsageError } from "../core/errors.js";
import { requireNdjson } from "./ndjson-input.js";
import { skipFinishedLines } from "./resume.js";
import type { RunSummary } from "./run-deliveries.js";
import { wholeRunCounts } from "./run-outcome.js";

export interface RunFilesOptions extends JournalHeader {
  /** How messages name the input: a file name, or "standard input". */
  inputName: string;
  /** The descriptor standard input is read from, when it has one (process.stdin's is 0). */
  stdinFd?: number | undefined;
  journalPath: string;
  deadLetterPath: string;
  resume: boolean;
}

/** A run's files as its worker threads take them: the two files, and the lock over both that each holds while it writes. */
export interface SharedRunFiles {
  journal: SharedAppendFile;
  deadLetter: SharedAppendFile | undefined;
  lock: SharedArrayBuffer;
}

/**
 * A run's files in a worker thread: it journals its finished lines and writes its dead letters
 * itself, as one thread's run would (a dead letter before its line's record, a record the journal
 * could not take taken back), holding the lock for all it writes in one go: the threads' writes
 * never interleave or cut into each other.
 */
export function attachRunFiles(shared: SharedRunFiles): { journal: JournalRecords; deadLetter: AppendFile | undefined } {
  const lock = new TurnLock(shared.lock);
  return {
    journal: new JournalRecords(AppendFile.attach(shared.journal, lock)),
    deadLetter: shared.deadLetter === undefined ? undefined : AppendFile.attach(shared.deadLetter, lock),
  };
}

/**
 * The files of a resumable run over an NDJSON input (replay, ingest): the journal (locked) and
 * the dead-letter file, opened before the first request; the input read with its digest and,
 * on resume, without the lines already finished; and, at the end, the journal completed or kept
 * and an unused dead-letter file removed.
 */
export class RunFiles {
  private readonly digest: Hash = createHash("sha256");
  private lastLine = 0;

  private constructor(
    private readonly options: RunFilesOptions,
    readonly journal: Journal,
    /** Not opened for a run that ended: its failure records are kept as they are. */
    readonly deadLetter: AppendFile | undefined,
    readonly state: JournalState,
  ) {}

  static async open(options: RunFilesOptions): Promise<RunFiles> {
    // Neither output may be the input (by device and inode, whatever the names), nor the other.
    const fromStdin = options.input === "-";
    const source = fromStdin ? options.stdinFd : options.input;
    const input = source === undefined ? undefined : keptFile(source, fromStdin ? "the file standard input reads" : `the input ${options.inputName}`);
    const kept = input === undefined ? [] : [input];
    const { journal, state } = await Journal.open(options.journalPath, options, options.resume, kept);
    try {
      const journalFile = journal.asKept();
      // A fresh run's dead-letter file holds this run's failures only; a resumed run's adds to it.
      const deadLetter =
        state.kind === "complete"
          ? undefined
          : AppendFile.open(options.deadLetterPath, "--dead-letter", state.kind === "partial" ? "append" : "truncate", {
              kept: journalFile === undefined ? kept : [...kept, journalFile],
            });
      return new RunFiles(options, journal, deadLetter, state);
    } catch (error) {
      journal.close();
      throw error;
    }
  }

  /**
   * The journal and the dead-letter file, for worker threads to write to (replay --workers: see
   * attachRunFiles) while this thread writes to neither; closed and completed here as ever.
   */
  share(): SharedRunFiles {
    return { journal: this.journal.share(), deadLetter: this.deadLetter?.share(), lock: TurnLock.memory() };
  }

  /** What the earlier parts of a resumed run came to. */
  get earlier(): OutcomeCounts | undefined {
    return this.state.kind === "partial" || this.state.kind === "complete" ? this.state.counts : undefined;
  }

  /** The input's lines, hashed as they are read, without those an earlier part finished. */
  lines(stream: Readable, counter?: { bytes: number }): AsyncIterable<InputLine[]> {
    const counted = this.count(requireNdjson(readLineBatches(stream, { digest: this.digest, counter }), this.options.inputName));
    return this.state.kind === "partial" ? skipFinishedLines(counted, this.state.finished, this.options.inputName, () => stream.readableEnded) : counted;
  }

  /** With a journal of a run that ended: reads the input through, and refuses it if it changed. */
  async checkUnchanged(stream: Readable): Promise<void> {
    if (this.state.kind !== "complete") return;
    for await (const batch of this.lines(stream)) void batch;
    if (this.digestText() !== this.state.digest || this.lastLine !== this.state.lines) {
      throw new UsageError(
        `--resume: ${this.options.inputName} is not the input of the complete run the journal records (it changed since); nothing was sent`,
        {
          hint: "run without --resume to send it all from the top",
        },
      );
    }
  }

  /**
   * Ends the files: the journal is completed when the whole input was finished (else kept for
   * --resume), and a fresh dead-letter file that received nothing is removed. Returns the
   * dead-letter file's path when it holds records of this run or an earlier part.
   */
  finish(summary: RunSummary | undefined, finished: boolean): string | undefined {
    try {
      this.deadLetter?.close();
    } catch {
      // The write error is the summary's already.
    }
    const earlier = this.earlier;
    const any = (this.deadLetter?.count ?? 0) > 0 || (earlier !== undefined && earlier.invalid + earlier.failed > 0);
    // Only a regular file wh started afresh: never a device such as /dev/null.
    if (!any && this.state.kind === "fresh" && this.deadLetter?.isRegularFile === true) rmSync(this.options.deadLetterPath, { force: true });
    try {
      if (finished && summary !== undefined) this.journal.complete({ lines: this.lastLine, digest: this.digestText(), counts: wholeRunCounts(summary) });
    } finally {
      this.journal.close();
    }
    return any ? this.options.deadLetterPath : undefined;
  }

  private async *count(batches: AsyncIterable<InputLine[]>): AsyncGenerator<InputLine[]> {
    for await (const batch of batches) {
      const last = batch[batch.length - 1];
      if (last !== undefined) this.lastLine = last.number;
      yield batch;
    }
  }

  private digestText(): string {
    return `sha256:${this.digest.digest("hex")}`;
  }
}
