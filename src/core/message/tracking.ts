import { MAX_BATCH_MESSAGES } from "../batch.js";
import { sizeError } from "./rules.js";
import { isJsonObject } from "./parse-json.js";
import { canonicalMs, isoFromMs, normalizeTimestamp } from "./timestamp.js";
import type { MessageStamps } from "./prepare.js";

/**
 * Segment's tracking API as `wh serve` answers it: the paths, the write key, and what Segment's
 * pipeline adds to each event before any destination sees it. Pure: the server hands in the
 * parsed body, the time it arrived and the caller's address.
 */

/**
 * The `code` of an error answer, beside `success: false` and `message`: stable, for programs.
 * analytics-python builds its error from `code` and `message` and treats a 4xx as final only when
 * both are there (segment/analytics/request.py); without them it retried a 400 for minutes.
 */
export type TrackingErrorCode =
  | "invalid_json"
  | "invalid_request"
  | "body_too_large"
  | "unsupported_encoding"
  | "no_write_key"
  | "unknown_write_key"
  | "not_found"
  | "method_not_allowed"
  | "forbidden"
  | "not_accepting"
  | "unavailable"
  | "internal_error";

/**
 * The largest event, in bytes of its compact JSON as the client sent it, before the pipeline adds
 * anything (a single call's `type` from its path included): 32 KiB, the limit the SDKs hold their
 * events to (analytics-node MAX_EVENT_SIZE_IN_KB 32, analytics-python MAX_MSG_SIZE 32 << 10).
 * analytics-python measures its own looser serialisation (", " separators), so what it lets
 * through is never larger here. Over it, a single call is answered 400 (segment-docs HTTP API,
 * "Max request size": "Segment's API responds with 400 Bad Request if these limits are
 * exceeded"), while a batch's event over it is rejected alone and the batch taken, as every
 * other event of a batch that cannot be taken is.
 */
const MAX_SENT_EVENT_BYTES = 32 * 1024;

/** `/v1/<call>` and the one-letter paths analytics.js posts to. */
const CALLS: Record<string, string> = {
  identify: "identify",
  track: "track",
  page: "page",
  screen: "screen",
  group: "group",
  alias: "alias",
  batch: "batch",
  import: "batch",
  i: "identify",
  t: "track",
  p: "page",
  s: "screen",
  g: "group",
  a: "alias",
  b: "batch",
};

/** What a POST path asks for: one call type, a batch, or nothing the API knows. */
export function trackingCall(path: string): string | undefined {
  const match = /^\/v1\/([a-z]+)\/?$/.exec(path);
  return match === null ? undefined : CALLS[match[1] as string];
}

export interface AcceptContext {
  receivedAt: Date;
  /** The caller's address, for context.ip when the event carries none. */
  ip: string | undefined;
  stamps: MessageStamps;
}

/** Why one event of a request was dropped while the request was taken: a /metrics label. */
export type RejectReason = "not_an_object" | "over_batch_limit" | "too_large" | "invalid_timestamp" | "invalid_message";

/** One event dropped from a request, named by its place and messageId. */
export interface RejectedEvent {
  /** Its index in the batch; 0 for a single call. */
  index: number;
  messageId: string | undefined;
  reason: RejectReason;
  error: string;
  /** The event as the client sent it (for the inspector). */
  sent: unknown;
}

/** One event taken from a request, as the pipeline enriched it, and its compact JSON (serialised once, here). */
export interface ExpandedEvent {
  index: number;
  event: Record<string, unknown>;
  text: string;
}

export type ExpandResult =
  | { ok: true; writeKey: string | undefined; events: ExpandedEvent[]; rejected: RejectedEvent[] }
  | { ok: false; code: "invalid_request" | "body_too_large"; error: string; writeKey?: string | undefined };

/**
 * The events of one request: a single call (its type from the path when the body has none) or a
 * batch. As Segment's tracking API does, only a request that is not a JSON object, or a batch
 * without its array, fails whole; an event that cannot be taken is rejected alone and the others
 * go on. Each is enriched as Segment's pipeline does it:
 * - batch-level `context` and `integrations` merged into each event (the event's keys win);
 * - `messageId` when missing; `receivedAt`; `context.ip` from the request when absent;
 * - `originalTimestamp` = the timestamp the client gave, and `timestamp` corrected for the
 *   client's clock: receivedAt - (sentAt - originalTimestamp) when the client sent `sentAt`.
 */
export function expandRequest(call: string, body: unknown, context: AcceptContext): ExpandResult {
  if (!isJsonObject(body)) return { ok: false, code: "invalid_request", error: "the body must be a JSON object" };
  const writeKey = typeof body.writeKey === "string" && body.writeKey !== "" ? body.writeKey : undefined;
  let raw: unknown[];
  let shared: Record<string, unknown> = {};
  if (call === "batch") {
    if (!Array.isArray(body.batch)) return { ok: false, code: "invalid_request", error: "a batch request needs a `batch` array", writeKey };
    raw = body.batch;
    shared = body;
  } else {
    const tooLarge = sizeProblem(body);
    if (tooLarge !== undefined) return { ok: false, code: "body_too_large", error: tooLarge, writeKey };
    raw = [{ ...body, type: body.type ?? call }];
  }
  const times = requestTimes(shared, context.receivedAt);
  const events: ExpandedEvent[] = [];
  const rejected: RejectedEvent[] = [];
  // An index, not entries(): the [index, item] pair it made for each event was garbage, 200 bytes an event.
  for (let index = 0; index < raw.length; index += 1) {
    const item = raw[index];
    if (!isJsonObject(item)) {
      rejected.push({ index, messageId: undefined, reason: "not_an_object", error: "an event must be a JSON object", sent: item });
      continue;
    }
    const messageId = typeof item.messageId === "string" ? item.messageId : undefined;
    if (index >= MAX_BATCH_MESSAGES) {
      rejected.push({ index, messageId, reason: "over_batch_limit", error: `past the ${MAX_BATCH_MESSAGES} events one batch may carry`, sent: item });
      continue;
    }
    const enriched = enrich(item, shared, context, times);
    const text = typeof enriched === "string" ? undefined : JSON.stringify(enriched);
    // Too large is said before an invalid timestamp, as when the size was measured first.
    const tooLarge = call === "batch" ? sizeProblem(item, text) : undefined;
    if (tooLarge !== undefined) rejected.push({ index, messageId, reason: "too_large", error: tooLarge, sent: item });
    else if (typeof enriched === "string") rejected.push({ index, messageId, reason: "invalid_timestamp", error: enriched, sent: item });
    else events.push({ index, event: enriched, text: text as string });
  }
  return { ok: true, writeKey, events, rejected };
}

/**
 * Why the event as sent is too large, if it is. With its enriched text (`enrichedText`), the exact
 * JSON.stringify of what was sent is paid only near the limit: enriching adds members and grows
 * values, except the members it drops or overwrites (REPLACED) and a null it may turn into `{}` or
 * `""` (NULLS_SHRINK), so the enriched text's bytes plus theirs bound the sent bytes from above.
 */
function sizeProblem(sent: Record<string, unknown>, enrichedText?: string): string | undefined {
  if (enrichedText !== undefined) {
    let replaced = NULLS_SHRINK;
    for (const key of REPLACED) if (sent[key] !== undefined) replaced += key.length + 4 + Buffer.byteLength(JSON.stringify(sent[key]));
    // A UTF-16 code unit is at most 3 bytes of UTF-8: the length alone settles an event of a few KB.
    if (enrichedText.length * 3 + replaced <= MAX_SENT_EVENT_BYTES || Buffer.byteLength(enrichedText) + replaced <= MAX_SENT_EVENT_BYTES) return undefined;
  }
  const bytes = Buffer.byteLength(JSON.stringify(sent));
  return bytes > MAX_SENT_EVENT_BYTES ? sizeError(bytes, MAX_SENT_EVENT_BYTES) : undefined;
}

/** The members of a sent event that enrich drops (writeKey) or overwrites with something perhaps shorter; each costs `"key":value,`. */
const REPLACED = ["writeKey", "receivedAt", "originalTimestamp"] as const;

/**
 * What enrich's nulls can lose: context or integrations null → `{}`, sentAt null → the batch's
 * `""`, messageId null → a new id (2 bytes each, were the id empty).
 */
const NULLS_SHRINK = 8;

/** What every event of one request shares, worked out once: its receipt time, and the batch's sentAt normalised and read. */
interface RequestTimes {
  received: string;
  receivedMs: number;
  /** normalizeTimestamp, answered from memory for the batch's own sentAt. */
  normalized(text: string): string | undefined;
  /** canonicalMs of a sentAt that `normalized` returned, answered from memory for the batch's own. */
  sentAtMs(normalized: string): number;
}

function requestTimes(batch: Record<string, unknown>, receivedAt: Date): RequestTimes {
  const batchSentAt = batch.sentAt;
  const batchNormalized = typeof batchSentAt === "string" ? normalizeTimestamp(batchSentAt) : undefined;
  const batchMs = batchNormalized === undefined ? Number.NaN : canonicalMs(batchNormalized);
  return {
    received: receivedAt.toISOString(),
    receivedMs: receivedAt.getTime(),
    normalized: (text) => (text === batchSentAt ? batchNormalized : normalizeTimestamp(text)),
    sentAtMs: (normalized) => (normalized === batchNormalized ? batchMs : canonicalMs(normalized)),
  };
}

function enrich(
  item: Record<string, unknown>,
  batch: Record<string, unknown>,
  { ip, stamps }: AcceptContext,
  { received, receivedMs, normalized, sentAtMs }: RequestTimes,
): Record<string, unknown> | string {
  const { writeKey: _writeKey, ...event } = item;
  const context = mergeObjects(batch.context, event.context);
  const integrations = mergeObjects(batch.integrations, event.integrations);
  if (context !== undefined) event.context = context;
  if (integrations !== undefined) event.integrations = integrations;
  if (ip !== undefined && collectsIp(event.context) && isJsonObject(event.context) && event.context.ip === undefined) {
    event.context = { ...event.context, ip };
  }
  if (event.messageId === undefined || event.messageId === null || event.messageId === "") event.messageId = stamps.newId();
  event.receivedAt = received;
  const sentAtText = event.sentAt ?? batch.sentAt;
  if (event.timestamp !== undefined && event.timestamp !== null) {
    if (typeof event.timestamp !== "string") return "timestamp must be an ISO 8601 string";
    const original = normalizeTimestamp(event.timestamp);
    if (original === undefined) return `timestamp ${JSON.stringify(event.timestamp)} is not an ISO 8601 date-time`;
    // The client's own texts, offsets and all, as Segment keeps them; `timestamp` is the pipeline's, in UTC.
    event.originalTimestamp = event.timestamp;
    const sentAt = typeof sentAtText === "string" ? normalized(sentAtText) : undefined;
    if (sentAtText != null && sentAt === undefined) return `sentAt ${JSON.stringify(sentAtText)} is not an ISO 8601 date-time`;
    event.timestamp = sentAt === undefined ? original : isoFromMs(receivedMs - (sentAtMs(sentAt) - canonicalMs(original)));
    if (sentAt !== undefined) event.sentAt = sentAtText;
  } else {
    event.timestamp = received;
    if (typeof sentAtText === "string") event.sentAt = sentAtText;
  }
  return event;
}

/**
 * Segment's libraries that run on the user's device: for their events Segment fills context.ip
 * from the request (the Spec's common fields: collected for analytics.js, iOS and Android).
 * A server-side library's request comes from the app's server, whose address is no user's,
 * unless the call says it comes from the user's device with `context.direct: true` (segment-docs
 * HTTP API, "Collecting IP Address": "When sending a HTTP call from a user's device, you can
 * collect the IP address by setting `context.direct` to `true`").
 */
const CLIENT_LIBRARIES = new Set([
  "analytics.js",
  "analytics-ios",
  "analytics-android",
  "analytics-kotlin",
  "analytics-swift",
  "analytics-react-native",
  "@segment/analytics-react-native",
  "analytics-flutter",
]);

function collectsIp(context: unknown): boolean {
  if (!isJsonObject(context)) return false;
  const { library } = context;
  return context.direct === true || (isJsonObject(library) && typeof library.name === "string" && CLIENT_LIBRARIES.has(library.name));
}

/** The batch's object under the event's: shallow, the event's keys win. */
function mergeObjects(outer: unknown, inner: unknown): unknown {
  if (!isJsonObject(outer)) return inner;
  if (inner === undefined || inner === null) return { ...outer };
  if (!isJsonObject(inner)) return inner;
  return { ...outer, ...inner };
}

/** The write key a `GET /v1/projects/<writeKey>/settings` asks for (analytics-next's `cdnURL`), or undefined for another path. */
export function settingsWriteKey(path: string): string | undefined {
  const match = /^\/v1\/projects\/([^/]+)\/settings\/?$/.exec(path);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1] as string);
  } catch {
    return undefined;
  }
}

/**
 * The settings analytics-next loads from its CDN (`<cdnURL>/v1/projects/<writeKey>/settings`,
 * packages/browser/src/browser/index.ts loadCDNSettings), pointing its Segment.io integration at
 * this wh serve: `apiHost` is host:port/v1 and the SDK posts to `<protocol>://<apiHost>/<t|i|p…>`.
 * Remote metrics are off (sampleRate 0): they would go to `<apiHost>/m`, which is no tracking call.
 */
export function browserSettings(writeKey: string, host: string): Record<string, unknown> {
  return {
    integrations: { "Segment.io": { apiKey: writeKey, apiHost: `${host}/v1`, protocol: "http", unbundledIntegrations: [], addBundledMetadata: true } },
    plan: { track: { __default: { enabled: true, integrations: {} } }, identify: { __default: { enabled: true } }, group: { __default: { enabled: true } } },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}

/** The write key of `Authorization: Basic base64(writeKey:)`, as Segment's libraries send it. */
export function basicAuthWriteKey(header: string | undefined): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header ?? "");
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const key = colon === -1 ? decoded : decoded.slice(0, colon);
  return key === "" ? undefined : key;
}
