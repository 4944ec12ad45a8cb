/** Deeper JSON than this is refused: nothing real nests so deep, and serialising it would overflow the stack. */
export const MAX_JSON_DEPTH = 256;

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export type ParsedJson = { ok: true; value: unknown } | { ok: false; error: string };

/** Thrown by parseJsonOrThrow for nesting deeper than MAX_JSON_DEPTH. */
export class JsonNestingError extends SyntaxError {
  constructor() {
    super(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    this.name = "JsonNestingError";
  }
}

/**
 * Parses one JSON text (a line, --data, a body), refusing nesting deeper than MAX_JSON_DEPTH as an
 * invalid input rather than letting a later JSON.stringify overflow the stack. Text too short to
 * nest that deep is not scanned.
 */
export function parseJson(text: string): ParsedJson {
  try {
    return { ok: true, value: parseJsonOrThrow(text) };
  } catch (error) {
    return { ok: false, error: error instanceof JsonNestingError ? error.message : `invalid JSON: ${(error as Error).message}` };
  }
}

/**
 * The same guarded parse for code written around JSON.parse (a state file, a lock, a query):
 * the value, or a SyntaxError (a JsonNestingError for nesting too deep). Every JSON that wh reads
 * from outside goes through here or parseJson.
 */
export function parseJsonOrThrow(text: string): unknown {
  if (text.length > MAX_JSON_DEPTH * 2 && nestingExceeds(text, MAX_JSON_DEPTH)) throw new JsonNestingError();
  return JSON.parse(text);
}

/**
 * Whether brackets outside strings nest deeper than `max`. A string is skipped with indexOf to its
 * closing quote rather than walked: strings are most of an event's text, and the walk cost half a
 * JSON.parse (56 us against 104 us for the parse of a 35 KB batch; 36 us skipping them).
 */
function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x22) {
      index = closingQuote(text, index);
      if (index === -1) return false; // an unterminated string: JSON.parse refuses the text
    } else if (code === 0x7b || code === 0x5b) {
      depth += 1;
      if (depth > max) return true;
    } else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return false;
}

/** Where the string opened at `open` ends: its next quote not escaped (an even run of backslashes before it), or -1. */
function closingQuote(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  while (end !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
}
