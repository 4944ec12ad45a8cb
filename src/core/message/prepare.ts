import { checkRequiredFields, checkShape, isDestinationEnabled, MAX_MESSAGE_BYTES, sizeError } from "./rules.js";
import {
  formatIssues,
  inboundMessageSchema,
  outboundMessageSchema,
  type InboundMessage,
  type MessageType,
} from "./schema.js";
import { parseJson } from "./parse-json.js";
import { normalizeTimestamp } from "./timestamp.js";

/** Where a message gets what it does not carry: the time and a fresh messageId. */
export interface MessageStamps {
  now(): Date;
  newId(): string;
}

/** A message ready for the wire: the exact body bytes are decided here, once. */
export interface PreparedMessage {
  type: MessageType;
  /** The exact JSON text that is signed and sent. */
  body: string;
  /** userId, else anonymousId: the key that orders one user's events. */
  userKey: string | undefined;
  messageId: string | undefined;
  /** False when the message's `integrations` turn this destination off. */
  enabled: boolean;
}

export type PrepareFailure = { ok: false; kind: "invalid-json" | "invalid-message" | "too-large" | "unreadable"; error: string };
export type PrepareResult = { ok: true; message: PreparedMessage } | PrepareFailure;

/**
 * Validates one message (Segment-spec input, or a message already in the outbound shape) and
 * turns it into the body the destination posts. Expected failures are values, never throws.
 */
export function prepareMessage(value: unknown, stamps: MessageStamps): PrepareResult {
  if (isOutboundShape(value)) return prepareOutbound(value, JSON.stringify(value));
  const parsed = inboundMessageSchema.safeParse(value);
  if (!parsed.success) return invalid(formatIssues(parsed.error).join("; "));
  const message = parsed.data;
  const problem = checkRequiredFields(message) ?? checkShape(message.type, message.properties, message.context);
  if (problem !== undefined) return invalid(problem);
  let timestamp: string;
  if (message.timestamp === undefined) timestamp = stamps.now().toISOString();
  else {
    const normalized = normalizeTimestamp(message.timestamp);
    if (normalized === undefined) return invalid(timestampError(message.timestamp));
    timestamp = normalized;
  }
  const outbound = buildOutbound(message, timestamp, stamps);
  return finish(message.type, JSON.stringify(outbound), message, outbound.messageId as string | undefined);
}

/** Parses one NDJSON line; an outbound-shaped line is sent as the very bytes it holds. */
export function prepareLine(line: string, stamps: MessageStamps): PrepareResult {
  const parsed = parseJson(line);
  if (!parsed.ok) return { ok: false, kind: "invalid-json", error: parsed.error };
  const value = parsed.value;
  return isOutboundShape(value) ? prepareOutbound(value, line.trim()) : prepareMessage(value, stamps);
}

function isOutboundShape(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && ("version" in value || "Previous ID" in value || "User ID" in value);
}

function prepareOutbound(value: Record<string, unknown>, body: string): PrepareResult {
  const parsed = outboundMessageSchema.safeParse(value);
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
  return finish(message.type, body, identity, message.messageId);
}

function buildOutbound(message: InboundMessage, timestamp: string, stamps: MessageStamps): Record<string, unknown> {
  const { type } = message;
  if (type === "delete") return { type, userId: message.userId, timestamp };
  const out: Record<string, unknown> = { version: 1, type };
  if (type === "alias") {
    out["Previous ID"] = message.previousId;
    out["User ID"] = message.userId;
  } else {
    out.userId = message.userId || null;
    if (message.anonymousId) out.anonymousId = message.anonymousId;
  }
  switch (type) {
    case "track":
      out.event = message.event;
      out.properties = message.properties ?? {};
      break;
    case "page":
      if (message.name !== undefined) out.name = message.name;
      if (message.category !== undefined) out.category = message.category;
      out.properties = message.properties ?? {};
      break;
    case "screen":
      if (message.name !== undefined) out.name = message.name;
      if (message.properties !== undefined) out.properties = message.properties;
      break;
    case "identify":
      out.traits = message.traits ?? {};
      break;
    case "group":
      out.groupId = message.groupId;
      out.traits = message.traits ?? {};
      break;
    case "alias":
      break;
  }
  if (type === "screen") out.context = message.context ?? {};
  else if (message.context !== undefined) out.context = message.context;
  out.messageId = message.messageId ?? stamps.newId();
  out.timestamp = timestamp;
  return out;
}

function finish(
  type: MessageType,
  body: string,
  identity: { userId?: string | null | undefined; anonymousId?: string | null | undefined; integrations?: Record<string, unknown> | undefined },
  messageId: string | undefined,
): PrepareResult {
  const bytes = Buffer.byteLength(body);
  if (bytes > MAX_MESSAGE_BYTES) return { ok: false, kind: "too-large", error: sizeError(bytes) };
  return {
    ok: true,
    message: {
      type,
      body,
      userKey: identity.userId || identity.anonymousId || undefined,
      messageId,
      enabled: isDestinationEnabled(identity.integrations),
    },
  };
}

function invalid(error: string): PrepareFailure {
  return { ok: false, kind: "invalid-message", error };
}

function timestampError(text: string): string {
  return `timestamp: ${JSON.stringify(text)} is not an ISO 8601 date-time`;
}
