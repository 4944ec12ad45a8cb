import type { Destination } from "../../config/resolve.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { asDeadLetterRecord } from "../../core/dead-letter.js";
import type { PrepareResult } from "../../core/message/prepare.js";
import type { DeliveryJob } from "../delivery-job.js";

/** An accepted event as it is stored (a spool line, a Redis entry): its source and the event as the pipeline enriched it. */
export interface StoredEvent {
  source: string | null;
  event: Record<string, unknown>;
  /** The id of the dead letter it was put back from (`wh serve dead-letters replay`, spool). */
  deadLetter?: string;
  /** Put back from a dead letter that names subscriptions (those it did not reach): it goes to them alone. */
  subscriptions?: string[];
}

/** An event accepting holds: what is stored, and the message prepared from it. */
export interface AcceptedEvent {
  stored: StoredEvent;
  prepared: PrepareResult;
  /** The stored record's text (JSON of `stored`), serialised once. */
  text: string;
}

/** A stored record read back; why it cannot be delivered when it is not one. */
export function readStored(text: string): StoredEvent | string {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed.error;
  const record = parsed.value;
  if (!isJsonObject(record) || !isJsonObject(record.event) || !(record.source === null || typeof record.source === "string"))
    return "not a record of wh serve's spool";
  const only = record.subscriptions;
  return {
    source: record.source,
    event: record.event,
    ...(typeof record.deadLetter === "string" ? { deadLetter: record.deadLetter } : {}),
    ...(Array.isArray(only) && only.every((name) => typeof name === "string") ? { subscriptions: only } : {}),
  };
}

/**
 * A queued entry put back from its dead letter (Redis): when the dead-letter record names the
 * subscriptions the event did not reach, the entry goes to them alone; else as it was.
 */
export function redriven(entry: string, record: string): string {
  const letter = parseJson(record);
  const only = letter.ok ? asDeadLetterRecord(letter.value)?.subscriptions : undefined;
  const stored = readStored(entry);
  return only === undefined || typeof stored === "string" ? entry : JSON.stringify({ ...stored, subscriptions: only } satisfies StoredEvent);
}

/**
 * Turns a stored event into a delivery job for the forwarder of its source (numbered as its
 * store numbers it); `prepared` when accepting prepared it already.
 */
export type JobMaker = (number: number, stored: StoredEvent, prepared?: PrepareResult) => { destination: Destination; job: DeliveryJob };

/** Where a forwarder's jobs come from, and how to make it stop waiting for more. */
export interface JobInput {
  jobs: AsyncIterable<readonly DeliveryJob[]>;
  stop(): void;
}
