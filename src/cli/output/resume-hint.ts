import { MASK, redactHeaderValue, redactUrl } from "../../core/redact.js";
import { type FlagTable, longName } from "../flags/spec.js";
import { shellQuote } from "../../core/shell-quote.js";

/**
 * The command that resumes a run: the same input and every flag of its table that the table marks
 * as mattering to a resumed run (`resume`), as the user typed it, shell-quoted.
 * Never a secret: --secret is left out (say WH_SHARED_SECRET instead), and URL passwords and
 * credential-like header values are masked, with a note that they must be typed again.
 */
export function resumeCommand(command: string, file: string, flags: Record<string, unknown>, table: FlagTable): string {
  const words = ["wh", command, file];
  let masked = false;
  for (const [key, spec] of Object.entries(table)) {
    const value = flags[key];
    if (spec.resume === undefined) continue;
    const flag = longName(spec);
    if (value === undefined || value === false) continue;
    if (value === true) {
      words.push(flag);
      continue;
    }
    for (const each of Array.isArray(value) ? (value as unknown[]) : [value]) {
      let text = String(each);
      if (spec.resume === "url") text = maskUrl(text);
      if (spec.resume === "header") text = maskHeader(text);
      if (spec.resume === "secret") text = MASK;
      masked ||= text.includes(MASK);
      words.push(flag, text);
    }
  }
  words.push("--resume");
  const line = words.map(shellQuote).join(" ");
  const notes: string[] = [];
  if (masked) notes.push(`type the values shown as ${MASK} again`);
  if (flags.secret !== undefined) notes.push("give the secret again (WH_SHARED_SECRET or --secret-file)");
  return notes.length === 0 ? line : `${line}   (${notes.join("; ")})`;
}

function maskUrl(text: string): string {
  try {
    return redactUrl(new URL(text));
  } catch {
    return text;
  }
}

function maskHeader(text: string): string {
  const colon = text.indexOf(":");
  if (colon <= 0) return text;
  const name = text.slice(0, colon).trim();
  return `${name}: ${redactHeaderValue(name, text.slice(colon + 1).trim())}`;
}
