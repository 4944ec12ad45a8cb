/**
 * What a terminal acts on instead of showing, beyond the C0 controls (ESC starts every escape
 * sequence, CR rewrites the line, BEL ends an OSC title): DEL, the C1 controls U+0080–U+009F
 * (U+009B is an 8-bit CSI, U+009D an 8-bit OSC, U+0085 a newline to some terminals), the bidi
 * controls that reorder what is shown (embeddings, overrides, isolates, and the LRM/RLM/ALM marks
 * that carry neutral characters such as digits across), and the Unicode line and paragraph
 * separators. JSON.stringify escapes C0 itself and leaves all of these raw.
 */
const ACTIVE_BEYOND_C0 = "\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\u2028\\u2029";
const ACTIVE = new RegExp(`[\\u0000-\\u001f${ACTIVE_BEYOND_C0}]`, "g");
const ACTIVE_IN_JSON = new RegExp(`[${ACTIVE_BEYOND_C0}]`, "g");

function unicodeEscape(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * Text that came from the network (a receiver's answer, a header, a body) made safe to print on a
 * terminal: control characters and escape sequences are shown as `\xNN` / `\uNNNN` / `\n` escapes,
 * so the text can neither move the cursor, retitle or clear the screen, nor forge wh's own lines.
 */
export function neutralize(text: string): string {
  return text.replace(ACTIVE, (char) => {
    if (char === "\n") return "\\n";
    if (char === "\r") return "\\r";
    if (char === "\t") return "\\t";
    const code = char.charCodeAt(0);
    return code > 0xff ? unicodeEscape(char) : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}

/**
 * Text from the network, held so that it cannot be printed raw by accident: every way of making
 * it a string (a template, String(), `+`, join, chalk, console.log) gives its neutralised form.
 * JSON gets the exact text (JSON escapes C0 itself; `jsonLine` escapes the rest), and anything
 * else that needs the raw text, such as a URL to send to, asks for it with `unsafeRaw()`.
 */
export class Untrusted {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  /** The exact text, for what is not a terminal (a request, a file, an HTML text node). */
  unsafeRaw(): string {
    return this.#text;
  }

  /** The text changed by `change` (masking a secret in it, say), still untrusted. */
  map(change: (text: string) => string): Untrusted {
    return new Untrusted(change(this.#text));
  }

  toString(): string {
    return neutralize(this.#text);
  }

  [Symbol.toPrimitive](): string {
    return this.toString();
  }

  toJSON(): string {
    return this.#text;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/** Marks text that came from the network (see Untrusted). */
export function untrusted(text: string): Untrusted {
  return new Untrusted(text);
}

/**
 * One JSON value as a line for stdout: JSON.stringify, with the controls it leaves raw (C1, bidi,
 * line separators) written as `\uNNNN` escapes. They can only stand inside strings, where the
 * escape means the same character, so a reader parses exactly the same value.
 */
export function jsonLine(value: object): string {
  return JSON.stringify(value).replace(ACTIVE_IN_JSON, unicodeEscape);
}
