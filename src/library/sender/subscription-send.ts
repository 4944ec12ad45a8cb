import type { Destination } from "../../config/resolve.js";
import { withAnySignal } from "../../core/any-signal.js";
import type { DeliveryEvent, DeliveryReport } from "../../core/deliver.js";
import { NO_SUBSCRIPTION_MATCHED, planRequests, routeEvent, type SubscriptionRequest } from "../../core/destination/route.js";
import { compileSubscriptions, nameSubscriptionIssues, type SubscriptionSet, subscriptionsSchema } from "../../core/destination/subscriptions.js";
import { InputError, UsageError } from "../../core/errors.js";
import type { EventFilter } from "../../core/destination/filters.js";
import type { SkipKind } from "../../core/message/skip.js";
import { type MessageStamps, prepareMessage } from "../../core/message/prepare.js";
import { formatIssues } from "../../core/message/schema.js";
import { safeParse } from "../../core/schema-check.js";
import type { Deliverer } from "../../engine/deliverer.js";
import { destinationTimeoutMs } from "../../core/deliver.js";
import { type AttemptRecord, recordAttempt } from "./attempt-history.js";
import type { SendOptions, SendReport, WebhookSenderSettings } from "./webhook-sender.js";

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
    throw new UsageError(nameSubscriptionIssues(issues, input).join("; "));
  }
  const { loadSegmentEngines } = await import("../../adapters/segment-engines.js");
  const engines = loadSegmentEngines();
  const compiled = compileSubscriptions(parsed.data, engines);
  if (!compiled.ok) throw new UsageError(compiled.issues.join("; "));
  return { subscriptions: compiled.value, engines };
}

export interface RoutedSend {
  set: SubscriptionSet;
  destination: Destination;
  deliverer: Deliverer;
  stamps: MessageStamps;
  /** The destination's filters, run before the subscriptions' triggers. */
  filter: EventFilter | undefined;
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
): Promise<{ messageId: string | undefined; skipReason?: string | undefined; skipKind?: SkipKind | undefined; deliveries: SubscriptionDelivery[] }> {
  const prepared = prepareMessage(message, send.stamps, { mode: "actions", filter: send.filter });
  if (!prepared.ok) throw new InputError(`invalid message: ${prepared.error}`, { hint: "nothing was sent" });
  const { message: event } = prepared;
  if (!event.enabled) return { messageId: event.messageId, skipReason: event.skipReason, skipKind: event.skipKind, deliveries: [] };
  const routes = await routeEvent(send.set.subscriptions, JSON.parse(event.body), send.set.engines);
  if (routes.length === 0) return { messageId: event.messageId, skipReason: NO_SUBSCRIPTION_MATCHED, skipKind: "unmatched", deliveries: [] };
  const invalid = routes.flatMap((route) => (route.ok ? [] : [{ subscription: route.subscription, outcome: "invalid" as const, reason: route.error }]));
  const sent = await Promise.all(
    planRequests([routes]).map(async (request): Promise<SubscriptionDelivery> => {
      const report = await withAnySignal(send.signals, (signal) => send.deliverer.deliverRequest(request, send.destination, { signal, onEvent: send.onEvent }));
      return { subscription: request.subscription, outcome: report.outcome, url: request.url, method: request.method, body: request.body, report };
    }),
  );
  return { messageId: event.messageId, deliveries: [...sent, ...invalid] };
}

/**
 * A message to a destination's subscriptions (sendRoutedMessage), reported as one: delivered when
 * every subscription's request was, aborted when one was cut, failed otherwise.
 */
export async function sendToSubscriptions(
  message: Record<string, unknown> | string | Uint8Array,
  context: {
    set: SubscriptionSet;
    destination: Destination;
    deliverer: Deliverer;
    stamps: MessageStamps;
    filter: EventFilter | undefined;
    closing: AbortSignal;
  },
  options: SendOptions,
): Promise<SendReport> {
  if (typeof message === "string" || message instanceof Uint8Array) {
    throw new UsageError("with subscriptions, send a Segment message object: each subscription maps the event, not a body");
  }
  const history: AttemptRecord[] = [];
  const signals = options.signal === undefined ? [context.closing] : [options.signal, context.closing];
  const onEvent = (event: DeliveryEvent): void => {
    recordAttempt(history, event);
    options.onEvent?.(event);
  };
  const sent = await sendRoutedMessage(message, { ...context, signals, onEvent });
  const reports = sent.deliveries.flatMap((delivery) => (delivery.report === undefined ? [] : [delivery.report]));
  const outcomes = sent.deliveries.map((delivery) => delivery.outcome);
  const outcome =
    sent.skipReason !== undefined
      ? "skipped"
      : outcomes.includes("aborted")
        ? "aborted"
        : outcomes.every((each) => each === "delivered")
          ? "delivered"
          : "failed";
  return {
    outcome,
    skipReason: sent.skipReason,
    skipKind: sent.skipKind,
    messageId: sent.messageId,
    body: sent.deliveries[0]?.body ?? "",
    deliveredTo: reports.find((report) => report.outcome === "delivered")?.deliveredTo,
    attempts: reports.reduce((sum, report) => sum + report.attempts, 0),
    durationMs: Math.max(0, ...reports.map((report) => report.durationMs)),
    targets: reports.flatMap((report) => report.targets),
    history,
    subscriptions: sent.deliveries,
  };
}

/** With subscriptions, the URLs, methods and headers are the mappings': the settings that set them otherwise are refused. */
export function subscriptionDestination(
  settings: Pick<WebhookSenderSettings, "method" | "mode" | "sharedSecret" | "scheme" | "timeoutMs"> & { webhooks?: unknown },
  routed: SubscriptionSet,
): Destination {
  const refused =
    settings.webhooks !== undefined ? "webhooks" : settings.method !== undefined ? "method" : settings.mode === "classic" ? "mode classic" : undefined;
  if (refused !== undefined) throw new UsageError(`${refused} cannot be used with subscriptions: each subscription's mapping sets its url, method and headers`);
  return {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: [],
    sharedSecret: settings.sharedSecret,
    secretOrigin: undefined,
    scheme: settings.scheme ?? "segment",
    mode: "actions",
    method: "POST",
    batchSize: 1,
    timeoutMs: settings.timeoutMs ?? destinationTimeoutMs("actions"),
    subscriptions: routed,
  };
}
