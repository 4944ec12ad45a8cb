import type { Destination } from "../../config/resolve.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { asDeadLetterRecord } from "../../core/dead-letter.js";
import type { PrepareResult } from "../../core/message/prepare.js";
import { userOf } from "../../core/shard.js";
import { untrusted } from "../../core/untrusted.js";
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

/** An event accepting holds: what is stored, and the message when accepting prepared it (a destination with filters). */
export interface AcceptedEvent {
  stored: StoredEvent;
  prepared?: PrepareResult | undefined;
  /** userId, else anonymousId: whose events it is in order with. */
  userKey: string | undefined;
  /** The stored record's text (storedText), serialised once. */
  text: string;
}

/** The most of a client's name or id a line shows: an event name of 2,000 characters would bury the line. */
const SHOWN_CHARS = 60;

/**
 * How wh serve's lines name an event: what the inspector's columns show (its type, a track's
 * event name, its user), then its messageId, which the dead letters and --json records give:
 * `track "Order Completed" by user-42 (messageId m-1)`. The client chose every part of it: each is
 * neutralised, and cut short.
 */
export function eventLabel(event: Readonly<Record<string, unknown>>): string {
  const type = typeof event.type === "string" && event.type !== "" ? shown(event.type) : "event";
  const name = typeof event.event === "string" ? ` "${shown(event.event)}"` : "";
  const user = userOf(event);
  return `${type}${name}${user === undefined ? "" : ` by ${shown(user)}`} (messageId ${shown(String(event.messageId))})`;
}

function shown(text: string): string {
  return String(untrusted(text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS - 1)}…` : text));
}

/**
 * The text of a stored record: its source first, always, so that a reader of a store several
 * sources share tells whose a record is from its first bytes (sourceTag) without parsing it.
 */
export function storedText({ source, event, ...more }: StoredEvent, eventText = JSON.stringify(event)): string {
  const rest = JSON.stringify(more);
  return rest === "{}" ? eventRecordText(sourceTag(source), eventText) : `${sourceTag(source)}"event":${eventText},${rest.slice(1)}`;
}

/**
 * storedText of a record that holds only its source and event, as accepting stores each: `tag`,
 * the source's sourceTag, is worked out once for a request's events.
 */
export function eventRecordText(tag: string, eventText: string): string {
  return `${tag}"event":${eventText}}`;
}

/** How every stored record of `source` starts. */
export function sourceTag(source: string | null): string {
  return `{"source":${JSON.stringify(source)},`;
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
  return only === undefined || typeof stored === "string" ? entry : storedText({ ...stored, subscriptions: only });
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
