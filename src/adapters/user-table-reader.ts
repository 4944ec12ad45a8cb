import { isUtf8 } from "node:buffer";
import { pipeline, Readable } from "node:stream";
import { parse as parseCsv, type Info, type Options } from "csv-parse";
import { csvRow, findUserColumns, jsonRow, type RowResult, type UserColumns } from "../core/user-table.js";
import { MAX_LINE_BYTES, readLines } from "./line-reader.js";

/** One row of a members or values file, or why it cannot be read, with the line it starts on. */
export interface UserTableLine {
  line: number;
  result: RowResult;
}

export interface ReadUserTableOptions {
  /** Values (userId and value) rather than members (userId alone). */
  wantValue: boolean;
  /** The file is named .csv: it must have a header naming its user column. */
  csv: boolean;
}

const NOT_UTF8 = "not valid UTF-8 (wh does not guess an encoding: save the file as UTF-8)";
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const BLANK_BYTES = new Set([0x20, 0x09, 0x0a, 0x0d, ...BOM]);

/**
 * Streams the rows of a members or values file, blank lines skipped: NDJSON when its first
 * character is `{`, else CSV (a plain list is CSV of one column) read whole by csv-parse, so a
 * quoted cell may hold line breaks. Nothing more than one record or line is held. A problem of
 * the file itself (no user column, not UTF-8, a quote never closed, a record over 1 MiB) is the
 * last row it yields: nothing after it can be read as meant.
 */
export async function* readUserTable(stream: Readable, options: ReadUserTableOptions): AsyncGenerator<UserTableLine> {
  const { first, input } = await peekFirstByte(stream);
  yield* first === 0x7b ? jsonLines(input, options.wantValue) : csvLines(input, options);
}

async function* jsonLines(input: Readable, wantValue: boolean): AsyncGenerator<UserTableLine> {
  for await (const line of readLines(input)) {
    if (line.problem !== undefined) {
      yield { line: line.number, result: { ok: false, error: line.problem } };
      return;
    }
    if (line.text.trim() !== "") yield { line: line.number, result: jsonRow(line.text, wantValue) };
  }
}

interface CsvRecord {
  /** The line it starts on. */
  line: number;
  /** Bytes (encoding: null), so that text that is not UTF-8 is seen, not turned into U+FFFD. */
  cells: Buffer[];
}

async function* csvLines(input: Readable, { wantValue, csv }: ReadUserTableOptions): AsyncGenerator<UserTableLine> {
  // The line each record starts on: the one after where the last record ended (csv-parse counts
  // lines as it goes; a blank line is a record of one empty cell, so none is skipped uncounted).
  let ended = 0;
  const options: Options<CsvRecord, Buffer[]> = {
    encoding: null,
    relax_quotes: true,
    relax_column_count: true,
    max_record_size: MAX_LINE_BYTES,
    on_record: (cells: Buffer[], info: Info) => {
      const line = ended + 1;
      ended = info.lines;
      return { line, cells };
    },
  };
  // Errors reach the loop below through the parser, which pipeline destroys with them. (csv-parse
  // types records made by on_record only with `columns`: hence the cast.)
  const records = pipeline(input, parseCsv(options as unknown as Options), () => {});
  let columns: UserColumns | undefined;
  try {
    for await (const { line, cells } of records as AsyncIterable<CsvRecord>) {
      if (!cells.every((cell) => isUtf8(cell))) {
        yield { line, result: { ok: false, error: NOT_UTF8 } };
        return;
      }
      const text = cells.map((cell) => cell.toString("utf8"));
      if (text.length === 1 && text[0]?.trim() === "") continue;
      if (columns === undefined) {
        const found = findUserColumns(text, wantValue, csv);
        if ("error" in found) {
          yield { line, result: { ok: false, error: found.error } };
          return;
        }
        columns = found;
        if (found.header) continue;
      }
      yield { line, result: csvRow(text, columns) };
    }
  } catch (error) {
    const problem = describeCsvError(error);
    if (problem === undefined) throw error;
    yield { line: ended + 1, result: { ok: false, error: problem } };
  }
}

/**
 * What a csv-parse error means for the record it stopped at. With relaxed quotes and column counts
 * these two are the only ones text can cause; any other (a read error) is not about the file's text.
 */
function describeCsvError(error: unknown): string | undefined {
  switch ((error as { code?: unknown }).code) {
    case "CSV_QUOTE_NOT_CLOSED":
      return "a quoted cell starts in this record and its closing quote never comes";
    case "CSV_MAX_RECORD_SIZE":
      return `the record is longer than the ${MAX_LINE_BYTES / 1024 / 1024} MiB a record may have (an identify is at most 32 KB); is a quote left open?`;
    default:
      return undefined;
  }
}

/**
 * The input's first byte that is not white space or a byte-order mark (undefined when it has
 * none), and the input whole again without its byte-order mark: the bytes read to find that byte,
 * then the rest as it comes. (The mark is taken off here, not by csv-parse, whose `bom` option
 * would turn its Buffers into strings, decoded whatever they hold.)
 */
async function peekFirstByte(stream: Readable): Promise<{ first: number | undefined; input: Readable }> {
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const read: Buffer[] = [];
  let first: number | undefined;
  while (first === undefined) {
    const next = await chunks.next();
    if (next.done === true) break;
    read.push(next.value);
    first = next.value.find((byte) => !BLANK_BYTES.has(byte));
  }
  const head = Buffer.concat(read);
  async function* whole(): AsyncGenerator<Buffer> {
    try {
      yield head.subarray(0, 3).equals(BOM) ? head.subarray(3) : head;
      for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value;
    } finally {
      await chunks.return?.();
    }
  }
  return { first, input: Readable.from(whole()) };
}
