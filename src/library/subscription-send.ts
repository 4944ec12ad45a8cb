import type { Destination } from "../config/resolve.js";
import { withAnySignal } from "../core/any-signal.js";
import type { DeliveryEvent, DeliveryReport } from "../core/deliver.js";
import { NO_SUBSCRIPTION_MATCHED, planRequests, routeEvent, type SubscriptionRequest } from "../core/destination/route.js";
import { compileSubscriptions, nameSubscriptionIssues, type SubscriptionSet, subscriptionsSchema } from "../core/destination/subscriptions.js";
import { ConfigError, InputError } from "../core/errors.js";
import { type MessageStamps, prepareMessage } from "../core/message/prepare.js";
import { formatIssues } from "../core/message/schema.js";
import { safeParse } from "../core/schema-check.js";
import type { Deliverer } from "../engine/deliverer.js";

/** What one subscription made of a message sent to a destination with subscriptions. */
export interface SubscriptionDelivery {
  subscription: string;
  /** invalid: its mapping failed for this message (Segment's reason); nothing was sent there. */
  outcome: DeliveryReport["outcome"] | "invalid";
  reason?: string | undefined;
  /** The request sent (absent when invalid): the mapped URL, method and exact body. */
  url?: string | undefined;
  method?: SubscriptionRequest["method"] | undefined;
  body?: string | undefined;
  report?: DeliveryReport | undefined;
}

/** The subscriptions of the sender's settings, checked with Segment's engines (loaded only now). */
export async function loadSubscriptionSet(input: unknown): Promise<SubscriptionSet> {
  const parsed = safeParse(subscriptionsSchema, input);
  if (!parsed.success) {
    const issues = formatIssues(parsed.error).map((issue) => `subscriptions${issue.startsWith("[") ? "" : ": "}${issue}`);
    throw new ConfigError(nameSubscriptionIssues(issues, input), { source: "the sender's settings" });
  }
  const { loadSegmentEngines } = await import("../adapters/segment-engines.js");
  const engines = loadSegmentEngines();
  const compiled = compileSubscriptions(parsed.data, engines);
  if (!compiled.ok) throw new ConfigError(compiled.issues, { source: "the sender's settings" });
  return { subscriptions: compiled.value, engines };
}

export interface RoutedSend {
  set: SubscriptionSet;
  destination: Destination;
  deliverer: Deliverer;
  stamps: MessageStamps;
  signals: AbortSignal[];
  onEvent: (event: DeliveryEvent) => void;
}

/**
 * A message to each subscription its trigger matches, all at once, each its own delivery; an
 * invalid message throws InputError, as without subscriptions. `skipReason` when none matches.
 */
export async function sendRoutedMessage(
  message: Record<string, unknown>,
  send: RoutedSend,
): Promise<{ messageId: string | undefined; skipReason?: string | undefined; deliveries: SubscriptionDelivery[] }> {
  const prepared = prepareMessage(message, send.stamps, { mode: "actions" });
  if (!prepared.ok) throw new InputError(`invalid message: ${prepared.error}`, { hint: "nothing was sent" });
  const { message: event } = prepared;
  if (!event.enabled) return { messageId: event.messageId, skipReason: event.skipReason, deliveries: [] };
  const routes = await routeEvent(send.set.subscriptions, JSON.parse(event.body), send.set.engines);
  if (routes.length === 0) return { messageId: event.messageId, skipReason: NO_SUBSCRIPTION_MATCHED, deliveries: [] };
  const invalid = routes.flatMap((route) => (route.ok ? [] : [{ subscription: route.subscription, outcome: "invalid" as const, reason: route.error }]));
  const sent = await Promise.all(
    planRequests([routes]).map(async (request): Promise<SubscriptionDelivery> => {
      const report = await withAnySignal(send.signals, (signal) => send.deliverer.deliverRequest(request, send.destination, { signal, onEvent: send.onEvent }));
      return { subscription: request.subscription, outcome: report.outcome, url: request.url, method: request.method, body: request.body, report };
    }),
  );
  return { messageId: event.messageId, deliveries: [...sent, ...invalid] };
}
