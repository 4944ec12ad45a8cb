import { fnv1a32 } from "./hash.js";
import { parseJsonOrThrow } from "./message/parse-json.js";

/** One of n processes that together replay one input: `--shard i/n`, 0-based. */
export interface Shard {
  index: number;
  count: number;
}

/** Parses `i/n` (0 <= i < n); undefined when the text is not one. */
export function parseShard(text: string): Shard | undefined {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  if (match === null) return undefined;
  const index = Number(match[1]);
  const count = Number(match[2]);
  return count >= 1 && index < count ? { index, count } : undefined;
}

/**
 * Which shard a line belongs to: its user key's (userId, else anonymousId; an alias's "User ID")
 * FNV-1a 32-bit hash modulo n, so each user's events stay together and in order in one process;
 * a line with no user key (not JSON, or no identity) goes by its line number, so it is reported
 * by exactly one shard.
 */
export function shardOfLine(text: string, lineNumber: number, count: number): number {
  const key = userKeyOf(text);
  return key === undefined ? (lineNumber - 1) % count : shardOfKey(key, count);
}

/** The shard (or `wh serve`'s queue partition) of a user key: FNV-1a 32-bit modulo n. */
export function shardOfKey(key: string, count: number): number {
  return fnv1a32(key) % count;
}

function userKeyOf(text: string): string | undefined {
  let value: unknown;
  try {
    value = parseJsonOrThrow(text);
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null ? userOf(value as Record<string, unknown>) : undefined;
}

/** Whom a message is about: userId, else an alias's "User ID", else anonymousId (non-empty text). */
export function userOf(message: Readonly<Record<string, unknown>>): string | undefined {
  for (const field of ["userId", "User ID", "anonymousId"]) {
    const key = message[field];
    if (typeof key === "string" && key !== "") return key;
  }
  return undefined;
}
