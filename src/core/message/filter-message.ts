import type { EventFilter } from "../destination/filters.js";
import type { MessageStamps, PreparedMessage, PrepareResult } from "./prepare.js";

/**
 * A prepared message through the destination filters: the event as Segment holds it (with the
 * messageId it was given when it had none: Segment always has one, and a sample may be on it) is
 * filtered before it is shaped; when a filter cut properties, `reshape` shapes what is left.
 */
export function filterMessage(filter: EventFilter, value: object, message: PreparedMessage, reshape: (event: object) => PrepareResult): PrepareResult {
  const event = value as Record<string, unknown>;
  const decision = filter(event.messageId === undefined && message.messageId !== undefined ? { ...event, messageId: message.messageId } : event);
  if (decision.dropped)
    return { ok: true, message: { ...message, enabled: false, skipKind: "filtered", skipReason: `the filter ${JSON.stringify(decision.title)} dropped it` } };
  return decision.changed ? reshape(decision.event) : { ok: true, message };
}

/** The same time and messageId each time they are asked for: a message shaped again keeps its own. */
export function stampedOnce(stamps: MessageStamps): MessageStamps {
  let now: Date | undefined;
  let id: string | undefined;
  return { now: () => (now ??= stamps.now()), newId: () => (id ??= stamps.newId()) };
}
