import type { TrackingAnswer, TrackingRequest } from "../../adapters/tracking-server.js";
import type { Destination } from "../../config/resolve.js";
import { checkMessage, prepareMessage, type MessageStamps, type PrepareFailure, type PrepareResult } from "../../core/message/prepare.js";
import { RecentBatch, type RecentIds } from "../../core/message/recent-ids.js";
import { expandRequest, type RejectedEvent, type TrackingErrorCode } from "../../core/message/tracking.js";
import { redactHeaders } from "../../core/redact.js";
import { untrusted, type Untrusted } from "../../core/untrusted.js";
import type { EventStore } from "./event-store.js";
import type { ServeMetrics } from "./metrics.js";
import { eventRecordText, sourceTag, type AcceptedEvent } from "./stored-event.js";

/** How long a client is asked to wait before retrying a 503 (full spool or disk). */
const RETRY_AFTER_SECONDS = 5;

/** A source as accepting sees it: its destination and the messageIds it accepted lately. */
export interface Source {
  destination: Destination;
  recent: RecentIds;
}

/** What became of one request to the tracking API. */
export interface AcceptedRequest {
  /** As the client sent it. */
  path: Untrusted;
  status: number;
  source: string | undefined;
  accepted: number;
  duplicates: number;
  /** The events dropped from a request that was taken (200): each with its place and rule. */
  rejected: Rejection[];
  /** Why it was refused, for statuses other than 200: it can quote what the client sent. */
  message?: Untrusted;
  /** The error answer's stable code, for statuses other than 200. */
  code?: TrackingErrorCode;
  /**
   * The events accepted, as the pipeline enriched them: read back from their stored records when
   * called (the inspector), so that nothing holds them while the store syncs.
   */
  events?: () => Record<string, unknown>[];
  /** The request's headers, credentials masked. */
  headers?: Record<string, string>;
}

/** An event dropped from a request; its messageId and the rule's words can quote the client. */
export interface Rejection {
  /** `batch[3]` or the call's path. */
  where: string;
  messageId: Untrusted | undefined;
  reason: RejectedEvent["reason"];
  error: Untrusted;
  /** The event as the client sent it, or as the pipeline enriched it when a destination rule refused it. */
  sent: unknown;
}

export interface AcceptOptions {
  sources: readonly Source[];
  /** With `sources` in the config each write key selects its source; otherwise any key is taken. */
  bySource: boolean;
  /** False for --role forward: every request is refused. */
  accepting: boolean;
  store: EventStore;
  metrics: ServeMetrics;
  stamps: MessageStamps;
  /** Resolves when a request may be taken on (see startServe's pacing). */
  admit?: (() => Promise<void>) | undefined;
  onRequest?: ((request: AcceptedRequest) => void) | undefined;
}

/**
 * Accepting: a request to the tracking API → its events (enriched as Segment's pipeline does,
 * each prepared for its destination, duplicates of recent messageIds dropped) → the store. The
 * answer is 200 only once the store has them.
 */
export function createAccept(options: AcceptOptions): (request: TrackingRequest) => Promise<TrackingAnswer> {
  const { metrics, sources } = options;
  const report = ({ path, message, ...request }: Omit<AcceptedRequest, "path" | "message"> & { path: string; message?: string }): TrackingAnswer => {
    metrics.requests.inc({ status: String(request.status) });
    for (const { reason } of request.rejected) metrics.rejected.inc({ reason });
    options.onRequest?.({ ...request, path: untrusted(path), ...(message === undefined ? {} : { message: untrusted(message) }) });
    if (request.status === 200) return { status: 200, body: request.rejected.length === 0 ? { success: true } : rejectedBody(request.rejected) };
    const retry = request.status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : undefined;
    return { status: request.status, body: { success: false, code: request.code, message }, ...(retry === undefined ? {} : { headers: retry }) };
  };
  /**
   * A request admitted: its events judged and handed to the store. Not an async function: a
   * suspended frame would hold the request, and its parsed body, until the store's fsync; what
   * waits for the store here is the answer's few figures and the records' texts.
   */
  const take = (request: TrackingRequest): TrackingAnswer | Promise<TrackingAnswer> => {
    const base = { path: request.path, accepted: 0, duplicates: 0, rejected: [] };
    const expanded = expandRequest(request.call, request.body, {
      receivedAt: options.stamps.now(),
      ip: request.ip?.replace(/^::ffff:/, ""),
      stamps: options.stamps,
    });
    const writeKey = request.authWriteKey ?? expanded.writeKey;
    // No write key, no source: Segment could not say whose events these are, nor can wh (flat settings included).
    const source =
      writeKey === undefined ? undefined : options.bySource ? sources.find((candidate) => candidate.destination.writeKey === writeKey) : sources[0];
    if (source === undefined) {
      return report({
        ...base,
        status: 401,
        code: writeKey === undefined ? "no_write_key" : "unknown_write_key",
        source: undefined,
        message: writeKey === undefined ? "no write key (send it as the basic-auth user, or writeKey in the body)" : "unknown write key",
      });
    }
    const name = source.destination.source;
    if (!expanded.ok) return report({ ...base, status: 400, code: expanded.code, source: name, message: expanded.error });
    const { call, path } = request;
    const where = (index: number): string => (call === "batch" ? `batch[${index}]` : path);
    const rejected = expanded.rejected.map((rejection) => rejectionAt(where(rejection.index), rejection));
    const tag = sourceTag(name ?? null);
    const fresh: AcceptedEvent[] = [];
    const ids = new RecentBatch();
    let duplicates = 0;
    for (const { index, event, text } of expanded.events) {
      const judged = judge(event, source.destination, options.stamps);
      const messageId = event.messageId as string;
      if (!judged.ok) {
        rejected.push(
          rejectionAt(where(index), { messageId, reason: judged.kind === "too-large" ? "too_large" : "invalid_message", error: judged.error, sent: event }),
        );
        continue;
      }
      if (!source.recent.fresh(messageId, ids)) {
        duplicates += 1;
        continue;
      }
      fresh.push({ stored: { source: name ?? null, event }, prepared: judged.prepared, userKey: judged.userKey, text: eventRecordText(tag, text) });
    }
    const taken = { ...base, source: name, rejected, duplicates };
    metrics.duplicates.inc({}, duplicates);
    if (!source.destination.enabled || fresh.length === 0) return report({ ...taken, status: 200 });
    const texts = fresh.map((event) => event.text);
    const headers = redactHeaders(request.headers);
    return options.store.append(fresh).then((refusal) => {
      if (refusal !== undefined) return report({ ...base, status: 503, code: "unavailable", source: name, message: refusal });
      source.recent.remember(ids);
      metrics.accepted.inc({}, texts.length);
      return report({ ...taken, status: 200, accepted: texts.length, events: () => texts.map(storedEvent), headers });
    });
  };
  return async (request) => {
    if (!options.accepting)
      return report({
        path: request.path,
        accepted: 0,
        duplicates: 0,
        rejected: [],
        status: 404,
        code: "not_accepting",
        source: undefined,
        message: "this wh serve only forwards (--role forward): send to one that accepts",
      });
    await options.admit?.();
    return take(request);
  };
}

/** The event of a record accepting stored (eventRecordText), read back: what the report's `events` give. */
function storedEvent(text: string): Record<string, unknown> {
  return (JSON.parse(text) as { event: Record<string, unknown> }).event;
}

/**
 * Whether the destination takes an event, judged before the 200 so that nothing it promises is
 * refused later. Without filters it is checked by prepareMessage's rules without building the
 * body (the forwarder builds it, once); with filters it is prepared whole, since a filter may cut
 * what the event needs, and the message goes on with it.
 */
function judge(
  event: Record<string, unknown>,
  destination: Destination,
  stamps: MessageStamps,
): { ok: true; userKey: string | undefined; prepared?: PrepareResult } | PrepareFailure {
  const { mode, filter } = destination;
  if (filter === undefined) return checkMessage(event, stamps, mode);
  const prepared = prepareMessage(event, stamps, { mode, fromTrackingApi: true, filter });
  return prepared.ok ? { ok: true, userKey: prepared.message.userKey, prepared } : prepared;
}

function rejectionAt(where: string, { messageId, reason, error, sent }: Omit<RejectedEvent, "index">): Rejection {
  return { where, messageId: messageId === undefined ? undefined : untrusted(messageId), reason, error: untrusted(error), sent };
}

/**
 * The 200 of a request some of whose events were dropped: how many, and why, so a developer
 * reading the answer sees it (the SDKs themselves ignore a 200's body).
 */
function rejectedBody(rejected: readonly Rejection[]): Record<string, unknown> {
  return {
    success: true,
    rejected: rejected.length,
    errors: rejected.map(({ where, messageId, reason, error }) => ({
      where,
      ...(messageId === undefined ? {} : { messageId: messageId.unsafeRaw() }),
      reason,
      message: error.unsafeRaw(),
    })),
  };
}
