import { checkRequiredFields, checkShape, MAX_MESSAGE_BYTES, sizeError } from "./rules.js";
import { formatIssues, parseInboundMessage } from "./schema.js";
import type { MessageType } from "./types.js";
import { normalizeTimestamp } from "./timestamp.js";
import { unlessNotJsonData } from "./json-data.js";
import type { MessageStamps } from "./prepare.js";

/** The message types the ingestion API takes from a client (a delete is not a client call). */
export const INGEST_TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const satisfies readonly MessageType[];
export type IngestType = (typeof INGEST_TYPES)[number];

export type IngestMessageResult =
  | { ok: true; type: IngestType; messageId: string; json: string; bytes: number }
  | { ok: false; code: "E_INVALID_MESSAGE" | "E_MESSAGE_TOO_LARGE"; error: string };

export interface LibraryInfo {
  name: string;
  version: string;
}

/**
 * Validates a Segment-spec message with the same schema and rules as the destination side and
 * serialises it once, in the ingestion API's own shape: the input's fields, plus a messageId and
 * a timestamp when it has none, and `context.library` naming the sending library (as
 * analytics-node's own sets it over the caller's), or with `keepOwnLibrary` only when the
 * message names none: a relay of what other libraries recorded (wh ingest) keeps their names.
 */
export function buildIngestMessage(input: unknown, stamps: MessageStamps, library: LibraryInfo, keepOwnLibrary = false): IngestMessageResult {
  const type = typeof input === "object" && input !== null ? (input as { type?: unknown }).type : undefined;
  if (type === "delete")
    return { ok: false, code: "E_INVALID_MESSAGE", error: `type: a delete is not sent by the client; use one of ${INGEST_TYPES.join(", ")}` };
  if (type === undefined) return { ok: false, code: "E_INVALID_MESSAGE", error: `missing type (one of ${INGEST_TYPES.join(", ")})` };
  if (!(INGEST_TYPES as readonly unknown[]).includes(type)) {
    return { ok: false, code: "E_INVALID_MESSAGE", error: `type: expected one of ${INGEST_TYPES.join(", ")} (got ${JSON.stringify(type)})` };
  }
  const parsed = parseInboundMessage(input);
  if (!parsed.success) return { ok: false, code: "E_INVALID_MESSAGE", error: formatIssues(parsed.error).join("; ") };
  const message = parsed.data;
  // The same field rules as the destination side: a page's properties.url is a string here too.
  const problem = checkRequiredFields(message) ?? checkShape(message.type, message.properties, message.context);
  if (problem !== undefined) return { ok: false, code: "E_INVALID_MESSAGE", error: problem };
  let timestamp = stamps.now().toISOString();
  if (message.timestamp != null) {
    const normalized = normalizeTimestamp(message.timestamp);
    if (normalized === undefined)
      return { ok: false, code: "E_INVALID_MESSAGE", error: `timestamp: ${JSON.stringify(message.timestamp)} is not an ISO 8601 date-time` };
    timestamp = normalized;
  }
  const messageId = message.messageId ?? stamps.newId();
  const own = keepOwnLibrary ? message.context?.library : undefined;
  const out = { ...message, context: { ...message.context, library: own ?? library }, messageId, timestamp };
  return unlessNotJsonData(
    input,
    () => serialised(message.type as IngestType, messageId, JSON.stringify(out)),
    (error) => ({ ok: false, code: "E_INVALID_MESSAGE", error }),
  );
}

function serialised(type: IngestType, messageId: string, json: string): IngestMessageResult {
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_MESSAGE_BYTES) return { ok: false, code: "E_MESSAGE_TOO_LARGE", error: sizeError(bytes) };
  return { ok: true, type, messageId, json, bytes };
}
