import type { MessageStamps } from "./prepare.js";
import type { InboundMessage } from "./schema.js";
import type { MessageType } from "./types.js";

/** The classic Webhooks destination's body for a message (the seed's shapes): what prepareMessage serialises. */
export function buildOutbound(message: InboundMessage, timestamp: string, stamps: MessageStamps): Record<string, unknown> {
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
      if (message.name != null) out.name = message.name;
      if (message.category != null) out.category = message.category;
      // The seed's Page.Traits, which analytics-go sends as properties: kept there, under properties' own keys.
      out.properties = message.traits == null ? (message.properties ?? {}) : { ...message.traits, ...message.properties };
      break;
    case "screen":
      if (message.name != null) out.name = message.name;
      if (message.properties != null) out.properties = message.properties;
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
  else if (message.context != null) out.context = message.context;
  out.messageId = message.messageId ?? stamps.newId();
  out.timestamp = timestamp;
  return out;
}

/** The fields of the input the classic shape carries (or uses: integrations decides delivery). */
export function carriedByClassic(type: MessageType, key: string): boolean {
  if (type === "delete") return key === "type" || key === "userId" || key === "timestamp" || key === "integrations";
  switch (key) {
    case "type":
    case "version":
    case "userId":
    case "anonymousId":
    case "context":
    case "messageId":
    case "timestamp":
    case "integrations":
      return true;
    case "event":
      return type === "track";
    case "name":
      return type === "page" || type === "screen";
    case "category":
      return type === "page";
    case "properties":
      return type === "track" || type === "page" || type === "screen";
    case "traits":
      return type === "identify" || type === "group" || type === "page";
    case "groupId":
      return type === "group";
    case "previousId":
      return type === "alias";
    default:
      return false;
  }
}
