import { parseJsonOrThrow } from "./message/parse-json.js";

/**
 * The value of a `--prop`/`--trait` flag or of a CSV cell: JSON when the text is JSON, else the
 * text. A number JSON cannot carry exactly as written stays text: `12345678901234567890` (past
 * 2^53), `1.10` (its trailing zero), `1e3`, `-0`.
 */
export function parseJsonOrText(text: string): unknown {
  let value: unknown;
  try {
    value = parseJsonOrThrow(text);
  } catch {
    return text;
  }
  return typeof value === "number" && String(value) !== text.trim() ? text : value;
}
