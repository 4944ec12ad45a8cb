import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { asDeadLetterRecord, type DeadLetterRecord } from "../../core/dead-letter.js";
import { InputError, OutputWriteError } from "../../core/errors.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { describeOutputError, openOutputFile } from "../output-file.js";
import { describeFsError } from "../read-input.js";

const FILE_NAME = /^dead-letters(?:\.(.+))?\.ndjson$/;
/** Bytes read from a dead-letter file at a time: list and replay hold this and one letter (a batch to put back), whatever the file's size. */
const CHUNK_BYTES = 64 * 1024;
/** Dead letters handed to `putBack` at a time: each batch is one append (one sync) to the spool. */
const BATCH = 1_000;
/** Kept lines written aside at a time. */
const WRITE_BYTES = 1 << 20;

/** The data directory's dead-letter file of a source (null: the flat settings'). */
export function deadLetterFileName(source: string | null): string {
  return source === null ? "dead-letters.ndjson" : `dead-letters.${source.replace(/[^A-Za-z0-9._-]/g, "_")}.ndjson`;
}

/** A dead letter that can be put back: a record wh wrote, with its event. */
export type ReadableDeadLetter = SpoolDeadLetter & { letter: { record: DeadLetterRecord; event: Record<string, unknown> } };

/** One line of a dead-letter file of wh serve's data directory, as list and replay see it. */
export interface SpoolDeadLetter {
  /** Stable while the line is in its file: a digest of its text, so `list` and `replay --id` agree whatever else changes. */
  id: string;
  file: string;
  /** Its line in the file, from 1 (it changes when lines before it are replayed). */
  fileLine: number;
  /** The source whose forwarder wrote it, by the file's name. */
  source: string | null;
  text: string;
  /** The record and the event it holds; or why the line cannot be put back. */
  letter: { record: DeadLetterRecord; event: Record<string, unknown> } | { problem: string };
}

/**
 * Every dead letter in `dataDir`'s `dead-letters[.source].ndjson`, file by file, oldest first, one
 * at a time: a file is read a chunk at a time, never held whole (it grows for as long as a
 * webhook is down). `sources` (the config's source names) tell whose file a file name that was
 * made safe is. A last line without its newline is still being written by a running wh serve:
 * it is not one yet.
 */
export function* readSpoolDeadLetters(dataDir: string, sources: readonly string[]): Generator<SpoolDeadLetter> {
  for (const file of deadLetterFiles(dataDir)) {
    const source = sourceOf(file, sources);
    for (const { line, number } of fileLines(join(dataDir, file))) if (line.trim() !== "") yield letterOf(line, file, number, source);
  }
}

/**
 * Takes the dead letters `take` chooses out of their files, a file at a time, yielding them in
 * batches: the caller must have each batch safe elsewhere (the spool, synced) before it asks
 * for the next. The lines left are written aside as they are read; once the file's last batch
 * is safe, the file set aside is synced and renamed over the old one (removed once empty), so a
 * crash leaves either file, never half of one, and a letter taken is out of its file only once
 * it is elsewhere. A file where nothing was taken is left as it was.
 */
export function* takeSpoolDeadLetters<Taken extends SpoolDeadLetter>(
  dataDir: string,
  sources: readonly string[],
  take: (letter: SpoolDeadLetter) => letter is Taken,
): Generator<Taken[]> {
  for (const file of deadLetterFiles(dataDir)) yield* takeFromFile(dataDir, file, sourceOf(file, sources), take);
  syncDirectory(dataDir);
}

/** Takes the lines whose id is in `ids` out of the dead-letter files (see takeSpoolDeadLetters), keeping the rest byte for byte. */
export function removeSpoolDeadLetters(dataDir: string, ids: ReadonlySet<string>): void {
  for (const _ of takeSpoolDeadLetters(dataDir, [], (letter): letter is SpoolDeadLetter => ids.has(letter.id))) {
    // Put back already: only their lines go.
  }
}

function* takeFromFile<Taken extends SpoolDeadLetter>(
  dataDir: string,
  file: string,
  source: string | null,
  take: (letter: SpoolDeadLetter) => letter is Taken,
): Generator<Taken[]> {
  const path = join(dataDir, file);
  const aside = new AsideFile(path);
  try {
    let batch: Taken[] = [];
    let taken = 0;
    const lines = fileLines(path);
    let next = lines.next();
    for (; next.done !== true; next = lines.next()) {
      const { line, number } = next.value;
      const letter = line.trim() === "" ? undefined : letterOf(line, file, number, source);
      if (letter === undefined || !take(letter)) aside.write(`${line}\n`);
      else if (batch.push(letter) >= BATCH) {
        taken += batch.length;
        yield batch;
        batch = [];
      }
    }
    // The last line being written, kept as it is.
    aside.write(next.value);
    taken += batch.length;
    if (batch.length > 0) yield batch;
    if (taken > 0) aside.replace();
  } finally {
    aside.discard();
  }
}

function letterOf(line: string, file: string, fileLine: number, source: string | null): SpoolDeadLetter {
  return { id: idOf(line), file, fileLine, source, text: line, letter: readLetter(line) };
}

function deadLetterFiles(dataDir: string): string[] {
  return readdirSync(dataDir)
    .filter((name) => FILE_NAME.test(name))
    .sort();
}

/**
 * The whole lines of a dead-letter file with their numbers (from 1), read a chunk at a time;
 * returns what follows the last newline (a line still being written). Splitting on the newline
 * byte before decoding keeps multi-byte characters whole across chunks. Something else by a
 * dead-letter file's name in the data directory is named, exit 2: a directory, or a named pipe,
 * which reading would wait on forever.
 */
function* fileLines(path: string): Generator<{ line: string; number: number }, string> {
  const fd = openLetterFile(path);
  try {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let rest: Buffer = Buffer.alloc(0);
    let number = 0;
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const bytes = chunk.subarray(0, read);
      let start = 0;
      for (let end = bytes.indexOf(0x0a); end !== -1; start = end + 1, end = bytes.indexOf(0x0a, start)) {
        number += 1;
        // A line begun in an earlier chunk is joined once, when it ends.
        const line = rest.length === 0 ? bytes.toString("utf8", start, end) : Buffer.concat([rest, bytes.subarray(0, end)]).toString("utf8");
        rest = Buffer.alloc(0);
        yield { line, number };
      }
      // Copied: the chunk is read into again.
      rest = Buffer.concat([rest, bytes.subarray(start)]);
    }
    return rest.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function openLetterFile(path: string): number {
  let problem: string;
  try {
    const stats = statSync(path);
    if (stats.isFile()) return openSync(path, "r");
    problem = stats.isDirectory() ? "is a directory" : stats.isFIFO() ? "is a named pipe (FIFO)" : "not a regular file";
  } catch (error) {
    problem = describeFsError(error);
  }
  throw new InputError(`${path}: ${problem}`, { hint: "wh serve writes its dead letters there as regular files: move this one out of the data directory" });
}

function sourceOf(file: string, sources: readonly string[]): string | null {
  const name = (FILE_NAME.exec(file) as RegExpExecArray)[1];
  if (name === undefined) return null;
  return sources.find((source) => deadLetterFileName(source) === file) ?? name;
}

function idOf(line: string): string {
  return createHash("sha256").update(line).digest("hex").slice(0, 16);
}

function readLetter(line: string): SpoolDeadLetter["letter"] {
  const parsed = parseJson(line);
  if (!parsed.ok) return { problem: parsed.error };
  const record = asDeadLetterRecord(parsed.value);
  if (record === undefined) return { problem: "not a dead-letter record wh wrote" };
  const original = parseJson(record.original);
  if (!original.ok || !isJsonObject(original.value)) return { problem: `its original is not an event (${record.outcome}: ${record.reason})` };
  return { record, event: original.value };
}

/** What is left of a dead-letter file, written beside it as it is read, to be renamed over it (or removed with it when empty). */
class AsideFile {
  private readonly temporary: string;
  private fd: number | undefined;
  private pending: string[] = [];
  private pendingBytes = 0;
  private empty = true;

  constructor(private readonly path: string) {
    this.temporary = `${path}.${process.pid}.tmp`;
  }

  write(text: string): void {
    if (text === "") return;
    if (text.trim() !== "") this.empty = false;
    this.pending.push(text);
    this.pendingBytes += text.length;
    if (this.pendingBytes >= WRITE_BYTES) this.flush();
  }

  /** Renames what was written over the file, synced; removes the file instead when nothing but blank lines is left. */
  replace(): void {
    if (this.empty) {
      rmSync(this.path);
      return;
    }
    this.flush();
    fsyncSync(this.fd as number);
    closeSync(this.fd as number);
    this.fd = undefined;
    renameSync(this.temporary, this.path);
  }

  /** Removes what was set aside and not renamed. */
  discard(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.temporary, { force: true });
  }

  private flush(): void {
    this.fd ??= openOutputFile(this.temporary, "the dead-letter file", "truncate");
    try {
      writeSync(this.fd, this.pending.join(""));
    } catch (error) {
      throw new OutputWriteError(`could not write ${this.temporary}: ${describeOutputError(error, this.temporary)}`, { cause: error });
    }
    this.pending = [];
    this.pendingBytes = 0;
  }
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
