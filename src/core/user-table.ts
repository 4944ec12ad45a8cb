/**
 * The rows of a members or values file: NDJSON objects with a userId (and a value), CSV with a
 * header naming a userId column (and a value column), or one userId per line (members) /
 * `userId,value` per line (values). Reading the file (and splitting CSV into records) is
 * adapters/user-table-reader.ts; what a record means is decided here.
 */
import { parseJsonOrText } from "./json-or-text.js";
import { isJsonObject, parseJsonOrThrow } from "./message/parse-json.js";

export type UserRow = { userId: string; value: unknown };
export type RowResult = { ok: true; row: UserRow } | { ok: false; error: string };

/** Where the user and the value are in the records of a CSV or plain file. */
export interface UserColumns {
  user: number;
  /** Absent for members. */
  value: number | undefined;
  /** The first record names the columns: it is not a user. */
  header: boolean;
}

const USER_ID_COLUMN = /^(user_?id)$/i;

/**
 * The columns of a CSV or plain file, from its first record, or why the file cannot be read. A
 * `.csv` file must have a header naming its user column: without one, `email` then `a@x` would be
 * read as two users.
 */
export function findUserColumns(first: readonly string[], wantValue: boolean, csv: boolean): UserColumns | { error: string } {
  const header = first.map((cell) => cell.trim());
  const user = header.findIndex((cell) => USER_ID_COLUMN.test(cell));
  if (user === -1) {
    if (csv || header.length > (wantValue ? 2 : 1)) {
      return {
        error: `no user column: the header (${header.map((cell) => JSON.stringify(cell)).join(", ")}) has no userId or user_id column; name the column that holds the user ids userId`,
      };
    }
    // No header: one userId per line, or userId,value.
    return { user: 0, value: wantValue ? 1 : undefined, header: false };
  }
  if (!wantValue) return { user, value: undefined, header: true };
  const named = header.findIndex((cell) => /^value$/i.test(cell));
  return { user, value: named !== -1 ? named : header.findIndex((_, index) => index !== user), header: true };
}

/** One CSV record as a row: its value follows the rule of `--trait` (JSON when it is JSON exactly as written, else text). */
export function csvRow(cells: readonly string[], columns: UserColumns): RowResult {
  const userId = cells[columns.user]?.trim() ?? "";
  if (userId === "") return { ok: false, error: "no userId" };
  if (columns.value === undefined) return { ok: true, row: { userId, value: true } };
  const cell = columns.value < 0 ? undefined : cells[columns.value];
  if (cell === undefined) return { ok: false, error: `no value for ${userId}` };
  return { ok: true, row: { userId, value: parseJsonOrText(cell.trim()) } };
}

/** One NDJSON line as a row. */
export function jsonRow(line: string, wantValue: boolean): RowResult {
  let value: unknown;
  try {
    value = parseJsonOrThrow(line);
  } catch (error) {
    return { ok: false, error: `invalid JSON: ${(error as Error).message}` };
  }
  if (!isJsonObject(value)) return { ok: false, error: "expected a JSON object" };
  const userId = value.userId ?? value.user_id;
  if (typeof userId !== "string" || userId === "") return { ok: false, error: "no userId (a non-empty string)" };
  if (!wantValue) return { ok: true, row: { userId, value: true } };
  if (!("value" in value)) return { ok: false, error: `no value for ${userId}` };
  return { ok: true, row: { userId, value: value.value } };
}
