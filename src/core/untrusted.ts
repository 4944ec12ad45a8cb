/**
 * Text that came from the network (a receiver's answer, a header) made safe to print on a
 * terminal: control characters and escape sequences are shown as `\xNN` / `\n` escapes, so an
 * answer can neither move the cursor, recolour the screen nor forge lines of wh's own output.
 */
export function neutralize(text: string): string {
  // C0 controls, DEL, C1 controls, and the bidi overrides that reorder what is shown.
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (char) => {
    if (char === "\n") return "\\n";
    if (char === "\r") return "\\r";
    if (char === "\t") return "\\t";
    const code = char.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}
