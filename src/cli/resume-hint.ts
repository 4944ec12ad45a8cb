import { MASK, redactHeaderValue, redactUrl } from "../core/redact.js";

/**
 * The flags that decide what a resumed run reads, where and how it delivers and where it
 * records, and how it shows it: every flag of replay and ingest but --secret, --resume and
 * --dry-run (test/cli/resume-hint.test.ts checks them against --help).
 */
const REPEATED_FLAGS: readonly [key: string, flag: string][] = [
  ["url", "--url"],
  ["header", "--header"],
  ["source", "--source"],
  ["config", "--config"],
  ["secretFile", "--secret-file"],
  ["ca", "--ca"],
  ["timeout", "--timeout"],
  ["retryWindow", "--retry-window"],
  ["maxAttempts", "--max-attempts"],
  ["journal", "--journal"],
  ["deadLetter", "--dead-letter"],
  ["concurrency", "--concurrency"],
  ["ordered", "--ordered"],
  ["rate", "--rate"],
  ["shard", "--shard"],
  ["mode", "--mode"],
  ["method", "--method"],
  ["batchSize", "--batch-size"],
  ["exactBytes", "--exact-bytes"],
  ["writeKey", "--write-key"],
  ["endpoint", "--endpoint"],
  ["flushAt", "--flush-at"],
  ["flushAfter", "--flush-after"],
  ["verbose", "--verbose"],
];

/**
 * The command that resumes a run: the same input and every flag that matters, shell-quoted.
 * Never a secret: --secret is left out (say WH_SHARED_SECRET instead), and URL passwords and
 * credential-like header values are masked, with a note that they must be typed again.
 */
export function resumeCommand(command: string, file: string, flags: Record<string, unknown>): string {
  const words = ["wh", command, file];
  let masked = false;
  for (const [key, flag] of REPEATED_FLAGS) {
    const value = flags[key];
    if (value === undefined || value === false) continue;
    if (value === true) {
      words.push(flag);
      continue;
    }
    for (const each of Array.isArray(value) ? (value as unknown[]) : [value]) {
      let text = String(each);
      if (key === "url" || key === "endpoint") text = maskUrl(text);
      if (key === "header") text = maskHeader(text);
      if (key === "writeKey") text = MASK;
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

/** A word as a POSIX shell reads it back: bare when safe, else in single quotes. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
