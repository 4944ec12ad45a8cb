import { isJsonObject } from "./message/parse-json.js";

/**
 * One record of a dead-letter file, as every runner writes it (wh replay, wh ingest, wh serve's
 * spool): the line it came from (for wh serve, the spool's record number), how and why it ended,
 * each URL's last answer (failed deliveries), when, and the line's own text.
 */
export interface DeadLetterRecord {
  line: number;
  outcome: "invalid" | "failed";
  reason: string;
  urls?: unknown[];
  /** With subscriptions: those that did not get the event (failed or invalid); re-driving the record sends to them alone. */
  subscriptions?: string[];
  at: string;
  original: string;
}

const KEYS = new Set(["line", "outcome", "reason", "urls", "subscriptions", "at", "original"]);

/**
 * A parsed NDJSON value that is a dead-letter record wh wrote: exactly its keys (`urls` may be
 * absent), each of its type. An event always has `type`, so no event is ever taken for one.
 */
export function asDeadLetterRecord(value: unknown): DeadLetterRecord | undefined {
  // Every replayed line comes through here: an event (no string `original`) is told at once,
  // before its keys are listed.
  if (!isJsonObject(value) || typeof value.original !== "string" || !Object.keys(value).every((key) => KEYS.has(key))) return undefined;
  const { line, outcome, reason, urls, subscriptions, at, original } = value;
  const isRecord =
    Number.isSafeInteger(line) &&
    (line as number) >= 0 &&
    (outcome === "invalid" || outcome === "failed") &&
    typeof reason === "string" &&
    (urls === undefined || Array.isArray(urls)) &&
    (subscriptions === undefined || (Array.isArray(subscriptions) && subscriptions.every((name) => typeof name === "string"))) &&
    typeof at === "string" &&
    typeof original === "string";
  return isRecord ? (value as unknown as DeadLetterRecord) : undefined;
}
