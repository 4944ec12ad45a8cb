import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { asDeadLetterRecord, type DeadLetterRecord } from "../core/dead-letter.js";
import { InputError, OutputWriteError } from "../core/errors.js";
import { isJsonObject, parseJson } from "../core/message/parse-json.js";
import { describeOutputError, openOutputFile } from "./output-file.js";
import { describeFsError } from "./read-input.js";

const FILE_NAME = /^dead-letters(?:\.(.+))?\.ndjson$/;

/** The data directory's dead-letter file of a source (null: the flat settings'). */
export function deadLetterFileName(source: string | null): string {
  return source === null ? "dead-letters.ndjson" : `dead-letters.${source.replace(/[^A-Za-z0-9._-]/g, "_")}.ndjson`;
}

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
 * Every dead letter in `dataDir`'s `dead-letters[.source].ndjson`, file by file, oldest first.
 * `sources` (the config's source names) tell whose file a file name that was made safe is. A last
 * line without its newline is still being written by a running wh serve: it is not one yet.
 */
export function readSpoolDeadLetters(dataDir: string, sources: readonly string[]): SpoolDeadLetter[] {
  const letters: SpoolDeadLetter[] = [];
  for (const file of deadLetterFiles(dataDir)) {
    const source = sourceOf(file, sources);
    const text = readLetterFile(join(dataDir, file));
    const whole = text.slice(0, text.lastIndexOf("\n") + 1).split("\n");
    whole.pop();
    whole.forEach((line, index) => {
      if (line.trim() !== "") letters.push({ id: idOf(line), file, fileLine: index + 1, source, text: line, letter: readLetter(line) });
    });
  }
  return letters;
}

/**
 * Takes the lines whose id is in `ids` out of the dead-letter files: each file that holds one is
 * written aside whole, synced and renamed over the old one (removed once empty), so a crash
 * leaves either file, never half of one.
 */
export function removeSpoolDeadLetters(dataDir: string, ids: ReadonlySet<string>): void {
  for (const file of deadLetterFiles(dataDir)) {
    const path = join(dataDir, file);
    const lines = readLetterFile(path).split("\n");
    const kept = lines.filter((line) => !ids.has(idOf(line)));
    if (kept.length === lines.length) continue;
    const rest = kept.join("\n");
    if (rest.trim() === "") rmSync(path);
    else replaceFile(path, rest);
  }
  syncDirectory(dataDir);
}

function deadLetterFiles(dataDir: string): string[] {
  return readdirSync(dataDir)
    .filter((name) => FILE_NAME.test(name))
    .sort();
}

/**
 * A dead-letter file's text. Something else by its name in the data directory is named, exit 2:
 * a directory, or a named pipe, which reading would wait on forever.
 */
function readLetterFile(path: string): string {
  let problem: string;
  try {
    const stats = statSync(path);
    if (stats.isFile()) return readFileSync(path, "utf8");
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

function replaceFile(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openOutputFile(temporary, "the dead-letter file", "truncate");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw new OutputWriteError(`could not write ${temporary}: ${describeOutputError(error, temporary)}`, { cause: error });
  }
  closeSync(fd);
  renameSync(temporary, path);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
