import { isObject, requireArgument } from "../arguments.js";
import { formatIssues, parsePageProperties, parseScreenContext } from "./schema.js";
import type { MessageType } from "./types.js";

/** The largest message accepted, in bytes of serialised JSON (the seed's 32 KB). */
export const MAX_MESSAGE_BYTES = 32_000;

/** The destination's name in a message's `integrations` object. */
export const DESTINATION_NAME = "Webhooks";

export interface IdentityFields {
  type: MessageType;
  userId?: string | null | undefined;
  anonymousId?: string | null | undefined;
  event?: string | undefined;
  groupId?: string | undefined;
  previousId?: string | undefined;
}

const IDENTITY = "You must pass either an 'anonymousId' or 'userId'.";

/**
 * The seed's required fields, in analytics-go's order and words. Returns the first rule the
 * message breaks, or undefined. An empty string counts as missing, as it does in Go.
 */
export function checkRequiredFields(message: IdentityFields): string | undefined {
  requireArgument(isObject(message), "message", "a message object", message);
  const hasIdentity = Boolean(message.userId) || Boolean(message.anonymousId);
  switch (message.type) {
    case "track":
      if (!message.event) return "You must pass 'event'.";
      return hasIdentity ? undefined : IDENTITY;
    case "group":
      if (!message.groupId) return "You must pass a 'groupId'.";
      return hasIdentity ? undefined : IDENTITY;
    case "alias":
      if (!message.userId) return "You must pass a 'userId'.";
      return message.previousId ? undefined : "You must pass a 'previousId'.";
    case "delete":
      return message.userId ? undefined : "You must pass a 'userId'.";
    case "identify":
    case "page":
    case "screen":
      return hasIdentity ? undefined : IDENTITY;
  }
}

/**
 * Whether a message's `integrations` let it reach this destination: not when `Webhooks` is
 * false, nor when `All` is false and `Webhooks` is not turned back on.
 */
export function isDestinationEnabled(integrations: Record<string, unknown> | null | undefined): boolean {
  if (integrations == null) return true;
  requireArgument(isObject(integrations), "integrations", "an object, null or undefined", integrations);
  const own = integrations[DESTINATION_NAME];
  if (own === false) return false;
  if (integrations.All === false) return own !== undefined && own !== null;
  return true;
}

export function sizeError(bytes: number, limit = MAX_MESSAGE_BYTES): string {
  return `message is ${bytes} bytes of JSON; the limit is ${limit} bytes (32 KB)`;
}

/** The seed's typed fields: page properties and screen context are strings where the seed names them. */
export function checkShape(type: MessageType, properties: unknown, context: unknown): string | undefined {
  const check = type === "page" ? parsePageProperties(properties ?? {}) : type === "screen" ? parseScreenContext(context ?? {}) : undefined;
  if (check === undefined || check.success) return undefined;
  const prefix = type === "page" ? "properties" : "context";
  return formatIssues(check.error)
    .map((issue) => `${prefix}.${issue}`)
    .join("; ");
}
