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
 * invalid input rather than letting a later JSON.stringify overflow the stack. Text that cannot
 * nest that deep (mayNestTooDeep) is not scanned.
 */
export function parseJson(text: string): ParsedJson {
  try {
    return { ok: true, value: parseJsonOrThrow(text) };
  } catch (error) {
    return { ok: false, error: parseError(error) };
  }
}

/**
 * The same guarded parse for code written around JSON.parse (a state file, a lock, a query):
 * the value, or a SyntaxError (a JsonNestingError for nesting too deep). Every JSON that wh reads
 * from outside goes through here or parseJson.
 */
export function parseJsonOrThrow(text: string): unknown {
  if (mayNestTooDeep(text) && (scanJson(text) & NESTS_TOO_DEEP) !== 0) throw new JsonNestingError();
  return JSON.parse(text);
}

/** parseJson's answer, and whether the text holds a number that inexactNumberProblem must look at. */
export type ParsedJsonNumbers = { ok: true; value: unknown; numbersToCheck: boolean } | { ok: false; error: string };

/**
 * parseJson for a text whose numbers are checked as well (the tracking API's bodies): one pass
 * over what lies outside its strings tells both its nesting and whether any number in it is long
 * enough, or has an exponent, for inexactNumberProblem to look at; most texts have none, and
 * that look over all of the text cost nearly what the nesting scan did.
 */
export function parseJsonNumbers(text: string): ParsedJsonNumbers {
  const scanned = scanJson(text);
  try {
    if (!tooShortToNest(text) && (scanned & NESTS_TOO_DEEP) !== 0) throw new JsonNestingError();
    return { ok: true, value: JSON.parse(text), numbersToCheck: (scanned & LONG_NUMBER) !== 0 };
  } catch (error) {
    return { ok: false, error: parseError(error) };
  }
}

function parseError(error: unknown): string {
  return error instanceof JsonNestingError ? error.message : `invalid JSON: ${(error as Error).message}`;
}

/** A text of at most twice MAX_JSON_DEPTH characters is left to JSON.parse: nesting that deep in it cannot close. */
function tooShortToNest(text: string): boolean {
  return text.length <= MAX_JSON_DEPTH * 2;
}

/**
 * Whether the text could nest deeper than MAX_JSON_DEPTH: not when it is too short to, nor when
 * it has no more `{` and `[` than the limit, inside strings or not (a single event or a line has
 * a few dozen, and counting them with indexOf costs a small part of the scan).
 */
function mayNestTooDeep(text: string): boolean {
  if (tooShortToNest(text)) return false;
  let openers = 0;
  for (const bracket of ["{", "["]) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      openers += 1;
      if (openers > MAX_JSON_DEPTH) return true;
    }
  }
  return false;
}

/** scanJson's flags: brackets nest deeper than MAX_JSON_DEPTH; a number token may not be held exactly. */
const NESTS_TOO_DEEP = 1;
const LONG_NUMBER = 2;

/**
 * One pass over a JSON text outside its strings: whether its brackets nest deeper than
 * MAX_JSON_DEPTH, and whether a number token has more than 15 characters or an exponent (those
 * inexactNumberProblem checks; a double holds any shorter one exactly). A string is skipped with
 * indexOf to its closing quote rather than walked: strings are most of an event's text, and the
 * walk cost half a JSON.parse (56 us against 104 us for the parse of a 35 KB batch; 36 us skipping
 * them). An unterminated string ends the scan: JSON.parse refuses the text.
 */
function scanJson(text: string): number {
  let depth = 0;
  let flags = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x22) {
      index = closingQuote(text, index);
      if (index === -1) return flags;
    } else if (code === 0x7b || code === 0x5b) {
      depth += 1;
      if (depth > MAX_JSON_DEPTH) return flags | NESTS_TOO_DEEP;
    } else if (code === 0x7d || code === 0x5d) depth -= 1;
    else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      const end = numberEnd(text, index);
      if (end - index > 15 || hasExponent(text, index, end)) flags |= LONG_NUMBER;
      index = end - 1;
    }
  }
  return flags;
}

/** Where the number token starting at `start` ends: past its digits, signs, point and exponent marks. */
function numberEnd(text: string, start: number): number {
  let end = start + 1;
  for (let code = text.charCodeAt(end); (code >= 0x30 && code <= 0x39) || code === 0x2e || code === 0x2b || code === 0x2d || code === 0x65 || code === 0x45; ) {
    end += 1;
    code = text.charCodeAt(end);
  }
  return end;
}

function hasExponent(text: string, start: number, end: number): boolean {
  for (let index = start; index < end; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x65 || code === 0x45) return true;
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
