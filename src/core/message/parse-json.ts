/** Deeper JSON than this is refused: nothing real nests so deep, and serialising it would overflow the stack. */
export const MAX_JSON_DEPTH = 256;

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export type ParsedJson = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Parses one JSON text (a line, --data), refusing nesting deeper than MAX_JSON_DEPTH as an invalid
 * input rather than letting a later JSON.stringify overflow the stack. Text too short to nest that
 * deep is not scanned.
 */
export function parseJson(text: string): ParsedJson {
  if (text.length > MAX_JSON_DEPTH * 2 && nestingExceeds(text, MAX_JSON_DEPTH)) {
    return { ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: `invalid JSON: ${(error as Error).message}` };
  }
}

/** Whether brackets outside strings nest deeper than `max`. */
function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index += 1; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) {
      depth += 1;
      if (depth > max) return true;
    } else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return false;
}
