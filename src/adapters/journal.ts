import { closeSync, fsyncSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { readFile, truncate } from "node:fs/promises";
import { type OutputWriteError, UsageError } from "../core/errors.js";
import { fnv1a32 } from "../core/hash.js";
import { parseJsonOrThrow } from "../core/message/parse-json.js";
import { countSkip, emptySkipCounts, type SkipCounts, type SkipKind } from "../core/message/skip.js";
import { AppendFile, type SharedAppendFile } from "./append-file.js";
import { CORRUPT_HINT, checkHeader, headerRecord, type JournalHeader, jsonObject, MAGIC, VERSION } from "./journal-header.js";
import { acquireLock, type FileLock } from "./lock-file.js";
import { checkOutputPath, describeOutputError, type KeptFile, openOutputFile } from "./output-file.js";

export type { DestinationIdentity, JournalHeader } from "./journal-header.js";

/** Line numbers are 32-bit: a record past that is corrupt, not a line. */
const MAX_LINE = 0xffff_ffff;
const RECORD = /^(\d{1,10}) ([0-9a-f]{8}) ([dsifru])$/;

export type FinishedOutcome = "delivered" | "skipped" | "invalid" | "failed";
/** Each outcome's count; of the skipped, how many a filter dropped and how many matched no subscription. */
export type OutcomeCounts = Record<FinishedOutcome, number> & SkipCounts;

const OUTCOME_CODES: Record<FinishedOutcome, string> = { delivered: "d", skipped: "s", invalid: "i", failed: "f" };
/** A skipped line's code says its kind too: s (integrations), r (filtered), u (matched no subscription). */
const SKIP_CODES: Record<SkipKind, string> = { integrations: "s", filtered: "r", unmatched: "u" };
const CODE_OUTCOMES: Record<string, [FinishedOutcome, SkipKind?]> = {
  d: ["delivered"],
  s: ["skipped", "integrations"],
  r: ["skipped", "filtered"],
  u: ["skipped", "unmatched"],
  i: ["invalid"],
  f: ["failed"],
};

/** The finished lines of an earlier run, sorted by line number, with each line's hash. */
export interface FinishedLines {
  lines: Uint32Array;
  hashes: Uint32Array;
}

/** What --resume found: nothing, an unfinished run, or a run that ended. */
export type JournalState =
  /** `replaced`: without --resume, what the journal held before this run started it afresh. */
  | { kind: "fresh"; replaced?: "complete" | "unfinished" | undefined }
  | { kind: "partial"; finished: FinishedLines; counts: OutcomeCounts }
  | { kind: "complete"; lines: number; digest: string; counts: OutcomeCounts };

/** How a finished line is recognised again on resume. */
export function lineHash(text: string): number {
  return fnv1a32(text);
}

export function emptyCounts(): OutcomeCounts {
  return { delivered: 0, skipped: 0, invalid: 0, failed: 0, ...emptySkipCounts() };
}

/**
 * Finished lines appended to a journal: each one record of its number, its hash and its outcome.
 * A Journal's, or those of a thread the journal was shared with (replay --workers).
 */
export class JournalRecords {
  constructor(protected readonly file: AppendFile) {}

  /** The write error that broke the journal, if one did. */
  get broken(): OutputWriteError | undefined {
    return this.file.broken;
  }

  /** The finished input line `number`, as read (`original`): its number, its text's hash and how it ended. */
  markFinished({ number, original }: { number: number; original: string }, outcome: FinishedOutcome, skip?: SkipKind): void {
    const code = outcome === "skipped" && skip !== undefined ? SKIP_CODES[skip] : OUTCOME_CODES[outcome];
    this.file.append(`${number} ${lineHash(original).toString(16).padStart(8, "0")} ${code}\n`);
  }

  /** Records written whole so far (the header among them). */
  get count(): number {
    return this.file.count;
  }

  /** Writes what was marked; throws OutputWriteError when the disk refuses (see AppendFile). */
  flush(): void {
    this.file.flush();
  }
}

/**
 * Which input lines are finished (delivered, skipped, invalid or failed and dead-lettered), each
 * with a hash of the line, so that --resume can tell the input is still the one it began with.
 * Records are flushed within the same turn of the event loop, so after `kill -9` only the
 * deliveries that were in flight are sent again. One writer at a time: a lock file beside it.
 * A run that ends is recorded as complete (the input's digest and the counts), so a later
 * --resume sends nothing and still reports what the run came to.
 */
export class Journal extends JournalRecords {
  private constructor(
    file: AppendFile,
    private readonly header: JournalHeader,
    private readonly lock: FileLock,
  ) {
    super(file);
  }

  /**
   * Takes the journal's lock, then reads it (with `resume`) or starts it afresh. The journal of a
   * run that ended is kept as it is: a --resume of it only reads it. The journal may not be one
   * of the `kept` files (the input).
   */
  static async open(path: string, header: JournalHeader, resume: boolean, kept: readonly KeptFile[] = []): Promise<{ journal: Journal; state: JournalState }> {
    const lock = acquireLock(`${path}.lock`, `the journal ${path}`);
    try {
      // Before reading it: a journal that is the input is refused as such, not called corrupt.
      checkOutputPath(path, "--journal", kept);
      const state: JournalState = resume ? await load(path, header) : { kind: "fresh", replaced: earlierRun(path, header) };
      const file = AppendFile.open(path, "--journal", state.kind === "fresh" ? "truncate" : "append", { kept });
      if (state.kind === "fresh") writeHeader(file, header);
      return { journal: new Journal(file, header, lock), state };
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  get path(): string {
    return this.file.path;
  }

  /** The journal file, for the run's other outputs to be checked against. */
  asKept(): KeptFile | undefined {
    return this.file.asKept(`the journal ${this.file.path}`);
  }

  /** Lets threads of this process append records (JournalRecords over AppendFile.attach) while this one writes none. */
  share(): SharedAppendFile {
    return this.file.share();
  }

  /**
   * Records that the whole input ended: the journal is replaced (written aside, synced, renamed)
   * by its header and one record of the input's line count, digest and the run's counts.
   */
  complete(record: { lines: number; digest: string; counts: OutcomeCounts }): void {
    this.file.close();
    // A journal on a device (--journal /dev/null) keeps nothing to complete; never rename over it.
    if (!this.file.isRegularFile) return;
    const temporary = `${this.file.path}.${process.pid}.tmp`;
    const fd = openOutputFile(temporary, "--journal", "truncate");
    try {
      writeSync(fd, `${JSON.stringify(headerRecord(this.header))}\n${JSON.stringify({ complete: true, ...record })}\n`);
      fsyncSync(fd);
    } catch (error) {
      throw new UsageError(`could not write the journal ${temporary}: ${describeOutputError(error, temporary)}`, { cause: error });
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.file.path);
  }

  /** Closes the journal (flushing what it can) and lets the next run take it. */
  close(): void {
    try {
      this.file.close();
    } finally {
      this.lock.release();
    }
  }
}

/** A fresh journal's first line; a disk that refuses it leaves the file closed, not open for the rest of the process. */
function writeHeader(file: AppendFile, header: JournalHeader): void {
  file.append(`${JSON.stringify(headerRecord(header))}\n`);
  try {
    file.flush();
  } catch (error) {
    file.close();
    throw error;
  }
}

async function load(path: string, expected: JournalHeader): Promise<JournalState> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "fresh" };
    throw new UsageError(`--resume: the journal ${path}: ${describeOutputError(error, path)}`, { cause: error });
  }
  const lines = text.split("\n");
  checkHeader(path, lines[0] ?? "", expected);
  // Every record ends with a newline: text after the last one was cut short by kill -9. Drop
  // it from the file too, so that what is appended next starts on a line of its own.
  const torn = lines.pop() ?? "";
  if (torn !== "") await truncate(path, Buffer.byteLength(text) - Buffer.byteLength(torn));
  const counts = emptyCounts();
  const second = lines[1] ?? "";
  if (second.startsWith("{")) return loadComplete(path, second, lines.length);
  const pairs: [number, number][] = [];
  for (let index = 1; index < lines.length; index += 1) {
    const match = RECORD.exec(lines[index] as string);
    const line = match === null ? 0 : Number(match[1]);
    if (match === null || line < 1 || line > MAX_LINE) throw corrupt(path, index + 1);
    pairs.push([line, Number.parseInt(match[2] as string, 16)]);
    const [outcome, skip] = CODE_OUTCOMES[match[3] as string] as [FinishedOutcome, SkipKind?];
    counts[outcome] += 1;
    countSkip(counts, skip);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  const finished: FinishedLines = { lines: new Uint32Array(pairs.length), hashes: new Uint32Array(pairs.length) };
  pairs.forEach(([line, hash], index) => {
    if (index > 0 && finished.lines[index - 1] === line)
      throw new UsageError(`--resume: the journal ${path} records line ${line} twice: it is corrupt`, { hint: CORRUPT_HINT });
    finished.lines[index] = line;
    finished.hashes[index] = hash;
  });
  return { kind: "partial", finished, counts };
}

function loadComplete(path: string, text: string, lineCount: number): JournalState {
  let record: { complete?: unknown; lines?: unknown; digest?: unknown; counts?: Partial<OutcomeCounts> };
  try {
    record = parseJsonOrThrow(text) as typeof record;
  } catch {
    throw corrupt(path, 2);
  }
  const counts = emptyCounts();
  for (const outcome of Object.keys(counts) as (keyof OutcomeCounts)[]) {
    // A run completed before skips had kinds recorded no filtered or unmatched count: none.
    const value = record.counts?.[outcome] ?? (outcome in emptySkipCounts() ? 0 : undefined);
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw corrupt(path, 2);
    counts[outcome] = value as number;
  }
  if (record.complete !== true || !Number.isSafeInteger(record.lines) || typeof record.digest !== "string" || lineCount !== 2) throw corrupt(path, 2);
  return { kind: "complete", lines: record.lines as number, digest: record.digest, counts };
}

/**
 * Whether the journal at `path` records an earlier run of this command over this input, complete
 * or not (its first two lines are enough), so that a run without --resume can say it starts over.
 */
function earlierRun(path: string, header: JournalHeader): "complete" | "unfinished" | undefined {
  let text: string;
  try {
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(65_536);
      text = buffer.toString("utf8", 0, readSync(fd, buffer, 0, buffer.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const [first = "", second = ""] = text.split("\n", 2);
  const earlier = jsonObject(first);
  if (earlier?.[MAGIC] !== VERSION || earlier.command !== header.command || earlier.input !== header.input) return undefined;
  if (second.startsWith("{")) return jsonObject(second)?.complete === true ? "complete" : undefined;
  return RECORD.test(second) ? "unfinished" : undefined;
}

function corrupt(path: string, line: number): UsageError {
  return new UsageError(`--resume: the journal ${path} is corrupt at its line ${line}`, { hint: CORRUPT_HINT });
}
