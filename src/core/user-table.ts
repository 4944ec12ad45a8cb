/**
 * Reads the lines of a members or values file: NDJSON objects with a userId (and a value), CSV
 * with a header naming a userId column (and a value column), or one userId per line (members)
 * / `userId,value` per line (values). The format is decided by the first non-blank line.
 */
import { parse as parseCsv } from "csv-parse/sync";

export type UserRow = { userId: string; value: unknown };
export type RowResult = { ok: true; row: UserRow } | { ok: false; error: string } | { ok: true; row: undefined };

export type RowParser = (line: string) => RowResult;

const USER_ID_COLUMN = /^(user_?id)$/i;

/**
 * Returns a parser for the file whose first non-blank line is `firstLine` (it returns row
 * undefined for a header), or why the file cannot be read. A `.csv` file must have a header
 * naming its user column: without one, `email` then `a@x` would be read as two users.
 */
export function createRowParser(firstLine: string, wantValue: boolean, csv: boolean): RowParser | { error: string } {
  if (firstLine.trimStart().startsWith("{")) return (line) => parseJsonRow(line, wantValue);
  const header = parseCsvLine(firstLine).map((cell) => cell.trim());
  const userColumn = header.findIndex((cell) => USER_ID_COLUMN.test(cell));
  if (userColumn === -1) {
    if (csv || header.length > (wantValue ? 2 : 1)) {
      return { error: `no user column: the header (${header.map((cell) => JSON.stringify(cell)).join(", ")}) has no userId or user_id column; name the column that holds the user ids userId` };
    }
    // No header: one userId per line, or userId,value.
    return (line) => csvRow(parseCsvLine(line), 0, wantValue ? 1 : undefined, wantValue);
  }
  const valueIndex = header.findIndex((cell) => /^value$/i.test(cell));
  const valueColumn = valueIndex !== -1 ? valueIndex : header.findIndex((_, index) => index !== userColumn);
  let seenHeader = false;
  return (line) => {
    if (!seenHeader) {
      seenHeader = true;
      return { ok: true, row: undefined };
    }
    return csvRow(parseCsvLine(line), userColumn, wantValue ? valueColumn : undefined, wantValue);
  };
}

function csvRow(cells: string[], userColumn: number, valueColumn: number | undefined, wantValue: boolean): RowResult {
  const userId = cells[userColumn]?.trim() ?? "";
  if (userId === "") return { ok: false, error: "no userId" };
  if (!wantValue) return { ok: true, row: { userId, value: true } };
  const cell = valueColumn === undefined || valueColumn < 0 ? undefined : cells[valueColumn];
  if (cell === undefined) return { ok: false, error: `no value for ${userId}` };
  return { ok: true, row: { userId, value: parseCell(cell.trim()) } };
}

function parseJsonRow(line: string, wantValue: boolean): RowResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { ok: false, error: `invalid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, error: "expected a JSON object" };
  const record = value as Record<string, unknown>;
  const userId = record.userId ?? record.user_id;
  if (typeof userId !== "string" || userId === "") return { ok: false, error: "no userId (a non-empty string)" };
  if (!wantValue) return { ok: true, row: { userId, value: true } };
  if (!("value" in record)) return { ok: false, error: `no value for ${userId}` };
  return { ok: true, row: { userId, value: record.value } };
}

/** A CSV cell's value: JSON when it parses (numbers, booleans, null), else the text. */
function parseCell(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Splits one CSV line with csv-parse (RFC 4180: quoted cells, doubled quotes inside them). */
export function parseCsvLine(line: string): string[] {
  const [cells] = parseCsv(line, { relax_column_count: true, relax_quotes: true }) as string[][];
  return cells ?? [""];
}
