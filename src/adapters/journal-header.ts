import { UsageError } from "../core/errors.js";
import { isJsonObject, parseJson } from "../core/message/parse-json.js";

// A journal's first line: what run it belongs to, checked before a run resumes from it.

export const MAGIC = "wh-journal";
export const VERSION = 2;

/**
 * Where a run delivers, as its journal records it: a fingerprint of every setting that decides
 * it, a description a person can read (passwords masked), and a digest of each setting the
 * description cannot show (a header's value, the write key), so that a refusal names what
 * changed without printing it. Never a secret in clear.
 */
export interface DestinationIdentity {
  fingerprint: string;
  description: string;
  /** Setting ("header X-Tenant", "the write key") to a digest of its value. */
  parts: Record<string, string>;
}

/** What a journal belongs to: the command, its input, the shard of it and where it delivers. */
export interface JournalHeader {
  command: string;
  /** An absolute path, or "-" for standard input. */
  input: string;
  /** `i/n` with --shard: each shard's journal is its own, even under one --journal name. */
  shard?: string | undefined;
  /** With --message-id: the chosen ids, sorted; the run is of those events alone. */
  messageIds?: readonly string[] | undefined;
  destination: DestinationIdentity;
}

export function headerRecord(header: JournalHeader): Record<string, unknown> {
  return {
    [MAGIC]: VERSION,
    command: header.command,
    input: header.input,
    shard: header.shard,
    messageIds: header.messageIds,
    destination: header.destination,
  };
}

export function jsonObject(text: string): Record<string, unknown> | undefined {
  const parsed = parseJson(text);
  return parsed.ok && isJsonObject(parsed.value) ? parsed.value : undefined;
}

export const CORRUPT_HINT = "run without --resume to start from the top (the journal is replaced), or pass --journal FILE";

export function checkHeader(path: string, text: string, expected: JournalHeader): void {
  const header = jsonObject(text);
  if (header === undefined || header[MAGIC] !== VERSION) {
    throw new UsageError(`--resume: ${path} is not a journal of this version of wh`, { hint: CORRUPT_HINT });
  }
  const was = header.input === "-" ? "standard input" : String(header.input);
  if (header.command !== expected.command || header.input !== expected.input) {
    throw new UsageError(
      `--resume: the journal ${path} belongs to \`wh ${String(header.command)}\` of ${was}, not of ${expected.input === "-" ? "standard input" : expected.input}`,
      { hint: CORRUPT_HINT },
    );
  }
  const part = describePart(typeof header.shard === "string" ? header.shard : undefined, Array.isArray(header.messageIds) ? header.messageIds : undefined);
  const expectedPart = describePart(expected.shard, expected.messageIds);
  if (part !== expectedPart) {
    throw new UsageError(`--resume: the journal ${path} records ${part} of ${was}, not ${expectedPart}`, {
      hint: "each shard and each choice of --message-id needs a journal of its own: leave --journal out (the default names one for each), or give each another",
    });
  }
  const destination = header.destination as Partial<DestinationIdentity> | undefined;
  if (destination?.fingerprint !== expected.destination.fingerprint) {
    throw new UsageError(`--resume: the run in ${path} ${describeChange(destination, expected.destination)}`, {
      hint: "resume with the same --url, --header, --source and --config as the run began with, or start afresh without --resume",
    });
  }
}

/** The part of the input a run delivers: a shard of it, its chosen events, or the whole input. */
function describePart(shard: string | undefined, messageIds: readonly unknown[] | undefined): string {
  const chosen = messageIds === undefined ? undefined : `only the events ${messageIds.join(" ")}`;
  if (shard === undefined) return chosen ?? "the whole input (no --shard)";
  return chosen === undefined ? `shard ${shard}` : `shard ${shard}, ${chosen}`;
}

/** What differs between the destination a run began with and this one, never a value that is not shown. */
function describeChange(before: Partial<DestinationIdentity> | undefined, after: DestinationIdentity): string {
  if (before?.description !== after.description)
    return `delivered to ${before?.description ?? "another destination"}; this one would deliver to ${after.description}`;
  const was = before.parts ?? {};
  const changes = [
    ...Object.keys(was).map((setting) =>
      after.parts[setting] === undefined ? `${setting} (not given now)` : after.parts[setting] !== was[setting] ? `${setting} (another value)` : "",
    ),
    ...Object.keys(after.parts).map((setting) => (was[setting] === undefined ? `${setting} (not given then)` : "")),
  ].filter(Boolean);
  return `delivered to ${after.description} with other settings than this one: ${changes.length > 0 ? changes.join(", ") : "headers, the write key or others"}`;
}
