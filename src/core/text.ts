/** A UTF-8 byte-order mark at the start of a text is not part of it (editors on Windows add one). */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
