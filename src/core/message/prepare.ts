import { isObject, requireArgument } from "../arguments.js";
import { checkRequiredFields, checkShape, isDestinationEnabled, MAX_MESSAGE_BYTES, sizeError } from "./rules.js";
import { formatIssues, parseInboundMessage, parseOutboundMessage, type InboundMessage } from "./schema.js";
import type { MessageType } from "./types.js";
import type { Route } from "../destination/route.js";
import { asCaptureRecord } from "../capture.js";
import { asDeadLetterRecord } from "../dead-letter.js";
import { inexactNumberProblem } from "./exact-numbers.js";
import { unlessNotJsonData } from "./json-data.js";
import { parseJson } from "./parse-json.js";
import { normalizeTimestamp } from "./timestamp.js";
import type { EventFilter } from "../destination/filters.js";
import { filterMessage, stampedOnce } from "./filter-message.js";
import { buildOutbound, carriedByClassic } from "./classic-outbound.js";
import type { SkipKind } from "./skip.js";

/** Where a message gets what it does not carry: the time and a fresh messageId. */
export interface MessageStamps {
  now(): Date;
  newId(): string;
}

/** Which generation of Segment's Webhooks destination wh delivers as (PRODUCT.md section 6). */
export type DestinationMode = "classic" | "actions";

export interface PrepareOptions {
  /** classic: the seed's shapes (default). actions: the whole event as Segment holds it. */
  mode?: DestinationMode | undefined;
  /** Send a line that is already in the outbound shape as its own bytes, not re-serialised. */
  exactBytes?: boolean | undefined;
  /**
   * True for an event wh serve accepted, judged as Segment's tracking API judges it: its size as
   * the client sent it (32 KiB), its fields as the API takes them (a page's properties.url need
   * not be a string). The seed's rules for what a caller writes (32,000 bytes of outbound body,
   * the typed page and screen fields) do not refuse it afterwards.
   */
  fromTrackingApi?: boolean | undefined;
  /** The destination's filters (Destination.filter), applied to the event before it is shaped. */
  filter?: EventFilter | undefined;
}

/** A message ready for the wire: the exact body bytes are decided here, once. */
export interface PreparedMessage {
  type: MessageType;
  /** The exact JSON text that is signed and sent. */
  body: string;
  /** userId, else anonymousId: the key that orders one user's events. */
  userKey: string | undefined;
  messageId: string | undefined;
  /** False when the message's `integrations` turn this destination off, or the mode never sends its type. */
  enabled: boolean;
  /** Why it is not sent: set whenever `enabled` is false. */
  skipReason?: string | undefined;
  /** What kind of reason that is: set whenever `enabled` is false. */
  skipKind?: SkipKind | undefined;
  /** The input's fields that the chosen outbound shape does not carry (classic mode), for --dry-run and --verbose. */
  dropped?: readonly string[] | undefined;
  /** With subscriptions: each matching subscription and what its mapping made of the event (core/destination/route.ts). */
  routes?: readonly Route[] | undefined;
  /** Only these subscriptions (a dead letter's, naming those that did not get the event). */
  only?: readonly string[] | undefined;
}

export type PrepareFailure = { ok: false; kind: "invalid-json" | "invalid-message" | "too-large" | "unreadable"; error: string };
export type PrepareResult = { ok: true; message: PreparedMessage } | PrepareFailure;

/**
 * Validates one message (Segment-spec input as a caller writes it or as Segment holds it, or a
 * message already in the classic outbound shape) and turns it into the body the destination
 * posts. What Segment sends is always the compact serialisation of the event. Expected failures
 * are values, never throws.
 */
export function prepareMessage(value: unknown, stamps: MessageStamps, options: PrepareOptions = {}): PrepareResult {
  checkArguments(stamps, options);
  return unlessNotJsonData(value, () => prepareValue(value, undefined, stamps, options), invalid);
}

/**
 * Parses one NDJSON line; with exactBytes, a line already in the outbound shape (any line, in
 * actions mode) is sent as the very bytes it holds. A line that is re-serialised must not hold a
 * number JSON.parse cannot keep exactly. A capture record of `wh listen --out` stands for the
 * body it captured; a dead-letter record for its original line, prepared as that line was (an
 * invalid one stays invalid, for the reason it gave).
 */
export function prepareLine(line: string, stamps: MessageStamps, options: PrepareOptions = {}): PrepareResult {
  requireArgument(typeof line === "string", "line", "a string", line);
  checkArguments(stamps, options);
  const parsed = parseJson(line);
  if (!parsed.ok) return { ok: false, kind: "invalid-json", error: parsed.error };
  const record = asCaptureRecord(parsed.value);
  if (record !== undefined) return prepareLine(record.body, stamps, options);
  const letter = asDeadLetterRecord(parsed.value);
  if (letter !== undefined)
    return letter.outcome === "invalid" ? invalid(letter.reason) : onlyTo(prepareLine(letter.original, stamps, options), letter.subscriptions);
  const sentAsIs = options.exactBytes === true && (options.mode === "actions" || isClassicOutbound(parsed.value));
  const inexact = sentAsIs ? undefined : inexactNumberProblem(line);
  if (inexact !== undefined) return { ok: false, kind: "invalid-message", error: inexact };
  return prepareValue(parsed.value, sentAsIs ? line.trim() : undefined, stamps, options);
}

/**
 * Whether prepareMessage would take an event wh serve accepted (`fromTrackingApi`), judged by the
 * same rules without building its body (the forwarder builds it, once), and its user key. Not for
 * a destination with filters: a filter may cut what the event needs, which only preparing shows.
 */
export function checkMessage(
  value: Record<string, unknown>,
  stamps: MessageStamps,
  mode: DestinationMode | undefined,
): { ok: true; userKey: string | undefined } | PrepareFailure {
  const checked =
    mode === "actions" || !isClassicOutbound(value) ? checkEvent(mode === "actions" ? actionsEvent(value) : value, stamps, false) : checkOutbound(value);
  if (!checked.ok) return checked;
  return { ok: true, userKey: userKeyOf("identity" in checked ? checked.identity : checked.message) };
}

/** A dead letter that names subscriptions goes to those alone. */
export function onlyTo(result: PrepareResult, subscriptions: readonly string[] | undefined): PrepareResult {
  return result.ok && subscriptions !== undefined ? { ok: true, message: { ...result.message, only: subscriptions } } : result;
}

function checkArguments(stamps: MessageStamps, options: PrepareOptions): void {
  requireArgument(typeof stamps?.now === "function" && typeof stamps.newId === "function", "stamps", "{ now(), newId() }", stamps);
  requireArgument(isObject(options), "options", "an object", options);
  const { mode } = options;
  requireArgument(mode === undefined || mode === "classic" || mode === "actions", "options.mode", '"classic" or "actions"', mode);
}

function prepareValue(value: unknown, exact: string | undefined, stamps: MessageStamps, options: PrepareOptions): PrepareResult {
  const { filter } = options;
  const once = filter === undefined ? stamps : stampedOnce(stamps);
  const shaped = prepareShape(value, exact, once, options);
  const result =
    filter === undefined || !shaped.ok || !shaped.message.enabled
      ? shaped
      : filterMessage(filter, value as object, shaped.message, (event) => prepareShape(event, undefined, once, options));
  if (!result.ok || options.fromTrackingApi === true) return result;
  const bytes = Buffer.byteLength(result.message.body);
  return bytes > MAX_MESSAGE_BYTES ? { ok: false, kind: "too-large", error: sizeError(bytes) } : result;
}

function prepareShape(value: unknown, exact: string | undefined, stamps: MessageStamps, options: PrepareOptions): PrepareResult {
  const seedShapes = options.fromTrackingApi !== true;
  if (options.mode === "actions") return prepareActions(value, exact, stamps, seedShapes);
  if (isClassicOutbound(value)) return prepareOutbound(value, exact ?? JSON.stringify(value));
  const checked = checkEvent(value, stamps, seedShapes);
  if (!checked.ok) return checked;
  const { message, timestamp } = checked;
  const outbound = buildOutbound(message, timestamp, stamps);
  const dropped = Object.keys(value as object).filter((key) => !carriedByClassic(message.type, key));
  return finish(message.type, JSON.stringify(outbound), message, outbound.messageId as string | undefined, dropped);
}

/** A classic capture: `version: 1`, or an alias with the seed's literal keys. */
function isClassicOutbound(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && ((value as { version?: unknown }).version === 1 || "Previous ID" in value || "User ID" in value);
}

/**
 * Segment's Webhooks (Actions) destination with its default mapping (`data: { '@path': '$.' }`,
 * action-destinations webhook/send/index.ts): the whole event as Segment holds it. Fields are kept
 * as the event has them, timestamps with their own offsets; only what every event Segment holds
 * has is filled in when missing (messageId, timestamp and receivedAt, context): sentAt and
 * originalTimestamp are the client's, never invented, and so is `integrations` (an event holds
 * it only when its client sent it: the webhook run by actions-core's createTestIntegration sends
 * none). An alias keeps camelCase previousId and userId. With exact bytes, the line goes as it is.
 */
function prepareActions(value: unknown, exact: string | undefined, stamps: MessageStamps, seedShapes: boolean): PrepareResult {
  const event = actionsEvent(value);
  const checked = checkEvent(event, stamps, seedShapes);
  if (!checked.ok) return checked;
  const { message } = checked;
  const filled: Record<string, unknown> = { ...(event as Record<string, unknown>) };
  if (exact === undefined) {
    const now = stamps.now().toISOString();
    filled.messageId ??= stamps.newId();
    filled.timestamp ??= now;
    filled.receivedAt ??= now;
    filled.context ??= {};
  }
  const result = finish(message.type, exact ?? JSON.stringify(filled), message, (filled.messageId as string | null | undefined) ?? undefined, []);
  // The webhook destination has no onDelete (webhook/index.ts): Segment never sends it a delete.
  if (!result.ok || message.type !== "delete") return result;
  return { ok: true, message: { ...result.message, enabled: false, skipKind: "integrations", skipReason: "the Actions webhook never sends delete" } };
}

/** The event the Actions webhook sends: a classic alias's literal keys as the event holds them (camelCase). */
function actionsEvent(value: unknown): unknown {
  return isClassicOutbound(value) ? fromClassicAlias(value) : value;
}

/** A classic alias's literal keys as the event holds them (camelCase). */
function fromClassicAlias(value: Record<string, unknown>): Record<string, unknown> {
  if (!("Previous ID" in value) && !("User ID" in value)) return value;
  const { "Previous ID": previousId, "User ID": userId, ...rest } = value;
  return { ...rest, previousId, userId };
}

/**
 * The schema, the seed's rules and the timestamp (normalised, or now): what every event must
 * pass; the seed's typed page and screen fields only with `seedShapes`.
 */
function checkEvent(value: unknown, stamps: MessageStamps, seedShapes: boolean): { ok: true; message: InboundMessage; timestamp: string } | PrepareFailure {
  const parsed = parseInboundMessage(value);
  if (!parsed.success) return invalid(formatIssues(parsed.error).join("; "));
  const message = parsed.data;
  const problem = checkRequiredFields(message) ?? (seedShapes ? checkShape(message.type, message.properties, message.context) : undefined);
  if (problem !== undefined) return invalid(problem);
  const timestamp = message.timestamp == null ? stamps.now().toISOString() : normalizeTimestamp(message.timestamp);
  if (timestamp === undefined) return invalid(timestampError(message.timestamp as string));
  return { ok: true, message, timestamp };
}

function prepareOutbound(value: Record<string, unknown>, body: string): PrepareResult {
  const checked = checkOutbound(value);
  return checked.ok ? finish(checked.message.type, body, checked.identity, checked.message.messageId, []) : checked;
}

/** A message in the classic outbound shape: its schema and the seed's rules, and who it is of. */
function checkOutbound(value: Record<string, unknown>) {
  const parsed = parseOutboundMessage(value);
  if (!parsed.success) return invalid(formatIssues(parsed.error).join("; "));
  const message = parsed.data;
  const identity = { ...message, userId: message.userId ?? message["User ID"], previousId: message["Previous ID"] };
  const problem =
    checkRequiredFields(identity) ??
    checkShape(message.type, message.properties, message.context) ??
    (normalizeTimestamp(message.timestamp) === undefined ? timestampError(message.timestamp) : undefined) ??
    (message.type === "delete" && Object.keys(value).some((key) => !["type", "userId", "timestamp"].includes(key))
      ? "a delete carries only type, userId and timestamp"
      : undefined);
  if (problem !== undefined) return invalid(problem);
  return { ok: true as const, message, identity };
}

function finish(
  type: MessageType,
  body: string,
  identity: { userId?: string | null | undefined; anonymousId?: string | null | undefined; integrations?: Record<string, unknown> | null | undefined },
  messageId: string | undefined,
  dropped: readonly string[],
): PrepareResult {
  return {
    ok: true,
    message: {
      type,
      body,
      userKey: userKeyOf(identity),
      messageId,
      ...(isDestinationEnabled(identity.integrations)
        ? { enabled: true }
        : { enabled: false, skipKind: "integrations" as const, skipReason: "its integrations turn the Webhooks destination off" }),
      ...(dropped.length === 0 ? {} : { dropped }),
    },
  };
}

function userKeyOf(identity: { userId?: string | null | undefined; anonymousId?: string | null | undefined }): string | undefined {
  return identity.userId || identity.anonymousId || undefined;
}

function invalid(error: string): PrepareFailure {
  return { ok: false, kind: "invalid-message", error };
}

function timestampError(text: string): string {
  return `timestamp: ${JSON.stringify(text)} is not an ISO 8601 date-time`;
}
