/**
 * A word in single quotes, which a POSIX shell reads back as the one word it was whatever it
 * holds: inside single quotes nothing is syntax (`;`, `$(…)`, backquotes, newlines), and a `'` is
 * closed, escaped and reopened. The inspector page's copy commands use it too (bundled into the
 * page with adapters/inspector/commands.ts).
 */
export function singleQuoted(text: string): string {
  return `'${String(text).replace(/'/g, "'\\''")}'`;
}

/** A word as a POSIX shell reads it back: bare when nothing in it is syntax, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : singleQuoted(word);
}
