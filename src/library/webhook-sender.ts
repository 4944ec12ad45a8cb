import { randomUUID } from "node:crypto";
import { systemClock } from "../adapters/system-clock.js";
import { NOT_UTF8, decodeUtf8 } from "../adapters/utf8.js";
import { parseWebhooks } from "../config/schema.js";
import { checkDeliveryShape, DEFAULT_RETRY_WINDOW_MS, type HttpMethod, webhookTarget } from "../config/destination.js";
import type { Destination } from "../config/resolve.js";
import { withAnySignal } from "../core/any-signal.js";
import { type Clock, clockStamps } from "../core/clock.js";
import { type DeliveryEvent, type DeliveryReport, destinationTimeoutMs } from "../core/deliver.js";
import { ConfigError, InputError, UsageError } from "../core/errors.js";
import { type DestinationMode, prepareMessage } from "../core/message/prepare.js";
import type { AttemptOutcome } from "../core/retry-policy.js";
import { batchEvents } from "../core/sign.js";
import { createDeliverer, type Deliverer } from "../engine/deliverer.js";
import type { SubscriptionSet } from "../core/destination/subscriptions.js";
import type { MessageStamps } from "../core/message/prepare.js";
import { loadSubscriptionSet, sendRoutedMessage, type SubscriptionDelivery } from "./subscription-send.js";

/** One webhook URL, with the static headers sent to it. */
export type WebhookUrl = string | URL | { url: string | URL; headers?: Record<string, string> | undefined };

/** What `wh send` takes from its flags and config, as options; each default is the CLI's. */
export interface WebhookSenderSettings {
  /** Where to deliver: one URL or up to five (a message is delivered once one answers 2xx). Not with `subscriptions`. */
  webhooks?: WebhookUrl | readonly WebhookUrl[] | undefined;
  /**
   * A Webhooks (Actions) destination's subscriptions, as Segment's Public API returns them (the
   * array, or the whole answer): each message goes to every enabled one whose FQL trigger
   * matches, as its mapping makes it (URL, method, headers, data). Up to 5; actions mode.
   */
  subscriptions?: readonly SubscriptionInput[] | { data: { subscriptions: readonly SubscriptionInput[] } } | undefined;
  /** Signs each body (X-Signature); without it nothing is signed. */
  sharedSecret?: string | undefined;
  /** classic (default): the seed's shapes, POST. actions: whole events, PUT or PATCH allowed. */
  mode?: DestinationMode | undefined;
  method?: HttpMethod | undefined;
  /** How long one attempt waits for its whole answer: 5 s (10 s in actions mode). */
  timeoutMs?: number | undefined;
  /** No retry starts later than this after the first attempt: 4 hours. */
  retryWindowMs?: number | undefined;
  /** Attempts per URL at most, the first included: unlimited (the window decides). */
  maxAttempts?: number | undefined;
  /** PEM files of extra trusted CAs (`--ca`), read relative to `cwd`. */
  ca?: readonly string[] | undefined;
  cwd?: string | undefined;
  /** HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from here: process.env unless given. */
  env?: NodeJS.ProcessEnv | undefined;
  /** What retries wait by, and messages are stamped with: the real clock unless given. */
  clock?: Clock | undefined;
  /** The messageId of a message without one: a random UUID unless given. */
  newId?: (() => string) | undefined;
}

/** One subscription as Segment's Public API returns it. */
export interface SubscriptionInput {
  id?: string | undefined;
  name: string;
  actionSlug: "send";
  enabled: boolean;
  /** FQL, as Segment evaluates it: `type = "track"`. */
  trigger: string;
  /** The Send action's mapping: url, method, headers, data, enable_batching, batch_size, batch_keys. */
  settings: Record<string, unknown>;
}

/** One attempt's answer or error, and how long the sender then waited before the next. */
export interface AttemptRecord {
  url: string;
  attempt: number;
  outcome: AttemptOutcome;
  durationMs: number;
  retryInMs?: number | undefined;
}

/** A DeliveryReport, with every attempt, and what was sent. */
export interface SendReport extends Omit<DeliveryReport, "outcome"> {
  /** skipped: the message's `integrations` turn the Webhooks destination off (or actions mode never sends its type). */
  outcome: DeliveryReport["outcome"] | "skipped";
  skipReason?: string | undefined;
  messageId: string | undefined;
  /** The exact bytes sent (and signed, unless an Actions batch: its first event). With subscriptions: the event as Segment holds it. */
  body: string;
  history: AttemptRecord[];
  /**
   * With subscriptions: each matching subscription's request and its outcome. The report's
   * outcome is delivered when every one was, skipped when none matched.
   */
  subscriptions?: SubscriptionDelivery[] | undefined;
}

export interface SendOptions {
  /** Aborting stops the attempt in flight and any wait: the report's outcome is then "aborted". */
  signal?: AbortSignal | undefined;
  onEvent?: ((event: DeliveryEvent) => void) | undefined;
}

export interface WebhookSender {
  /**
   * A Segment message object is validated and shaped as `wh send` does (throws InputError when
   * invalid); a string or bytes is a raw body, sent as it is (in actions mode a JSON array is a
   * batch, signed over its first event, as Segment signs batches).
   */
  send(message: Record<string, unknown> | string | Uint8Array, options?: SendOptions): Promise<SendReport>;
  /** Closes the connections; sends in flight are stopped. */
  close(): Promise<void>;
}

/** The CLI's delivery engine behind one call: validation, signing, Segment's retry rules, --ca and proxies. */
export async function createWebhookSender(settings: WebhookSenderSettings): Promise<WebhookSender> {
  const routed = settings.subscriptions === undefined ? undefined : await loadSubscriptionSet(settings.subscriptions);
  const destination = destinationOf(settings, routed);
  const clock = settings.clock ?? systemClock;
  const stamps = clockStamps(clock, settings.newId ?? randomUUID);
  const deliverer = await createDeliverer(
    {
      configPath: undefined,
      destinations: [destination],
      caFiles: [...(settings.ca ?? [])],
      cwd: settings.cwd ?? process.cwd(),
      timeoutMs: destination.timeoutMs,
      retryWindowMs: atLeast("retryWindowMs", settings.retryWindowMs, 0) ?? DEFAULT_RETRY_WINDOW_MS,
      maxAttempts: atLeast("maxAttempts", settings.maxAttempts, 1) ?? Number.POSITIVE_INFINITY,
    },
    { env: settings.env ?? process.env, clock },
  );
  const closing = new AbortController();
  return {
    async send(message, options = {}) {
      if (routed !== undefined) return sendToSubscriptionsOf(message, { set: routed, destination, deliverer, stamps, closing: closing.signal }, options);
      const request = requestOf(message, destination.mode, stamps);
      if (request.skipReason !== undefined) return skipped(request);
      const history: AttemptRecord[] = [];
      const signals = options.signal === undefined ? [closing.signal] : [options.signal, closing.signal];
      const report = await withAnySignal(signals, (signal) =>
        deliverer.deliver(request.body, destination, {
          signal,
          signedText: request.signedText,
          onEvent: (event) => {
            record(history, event);
            options.onEvent?.(event);
          },
        }),
      );
      return { ...report, messageId: request.messageId, body: request.body, history };
    },
    close: () => {
      closing.abort();
      return deliverer.close();
    },
  };
}

/**
 * A message to a destination's subscriptions (sendRoutedMessage), reported as one: delivered when
 * every subscription's request was, aborted when one was cut, failed otherwise.
 */
async function sendToSubscriptionsOf(
  message: Record<string, unknown> | string | Uint8Array,
  context: { set: SubscriptionSet; destination: Destination; deliverer: Deliverer; stamps: MessageStamps; closing: AbortSignal },
  options: SendOptions,
): Promise<SendReport> {
  if (typeof message === "string" || message instanceof Uint8Array) {
    throw new UsageError("with subscriptions, send a Segment message object: each subscription maps the event, not a body");
  }
  const history: AttemptRecord[] = [];
  const signals = options.signal === undefined ? [context.closing] : [options.signal, context.closing];
  const onEvent = (event: DeliveryEvent): void => {
    record(history, event);
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

function destinationOf(settings: WebhookSenderSettings, routed: SubscriptionSet | undefined): Destination {
  if (routed !== undefined) return subscriptionDestinationOf(settings, routed);
  if (settings.webhooks === undefined) throw new UsageError("give webhooks (the URLs to deliver to) or subscriptions");
  const mode = settings.mode ?? "classic";
  const method = settings.method ?? "POST";
  checkDeliveryShape({ mode, method, batchSize: 1 }, { mode: "mode", method: "method", batchSize: "batchSize" });
  const given = Array.isArray(settings.webhooks) ? settings.webhooks : [settings.webhooks as WebhookUrl];
  const checked = parseWebhooks(
    given.map((hook) => (typeof hook === "string" || hook instanceof URL ? { url: String(hook) } : { ...hook, url: String(hook.url) })),
  );
  if (!checked.ok)
    throw new ConfigError(
      checked.issues.map((issue) => (issue.startsWith("[") ? `webhooks${issue}` : `webhooks: ${issue}`)),
      { source: "the sender's settings" },
    );
  if (settings.sharedSecret === "") throw new UsageError("sharedSecret is empty: give the secret, or leave it out to send unsigned");
  return {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: checked.value.map((hook) => webhookTarget(new URL(hook.url), hook.headers ?? {})),
    sharedSecret: settings.sharedSecret,
    secretOrigin: undefined,
    mode,
    method,
    batchSize: 1,
    timeoutMs: atLeast("timeoutMs", settings.timeoutMs, 1) ?? destinationTimeoutMs(mode),
  };
}

/** With subscriptions, the URLs, methods and headers are the mappings': the settings that set them otherwise are refused. */
function subscriptionDestinationOf(settings: WebhookSenderSettings, routed: SubscriptionSet): Destination {
  const refused =
    settings.webhooks !== undefined ? "webhooks" : settings.method !== undefined ? "method" : settings.mode === "classic" ? "mode classic" : undefined;
  if (refused !== undefined) throw new UsageError(`${refused} cannot be used with subscriptions: each subscription's mapping sets its url, method and headers`);
  if (settings.sharedSecret === "") throw new UsageError("sharedSecret is empty: give the secret, or leave it out to send unsigned");
  return {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: [],
    sharedSecret: settings.sharedSecret,
    secretOrigin: undefined,
    mode: "actions",
    method: "POST",
    batchSize: 1,
    timeoutMs: atLeast("timeoutMs", settings.timeoutMs, 1) ?? destinationTimeoutMs("actions"),
    subscriptions: routed,
  };
}

/** A number setting: absent, or a number at least `min`. */
function atLeast(name: string, value: number | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || Number.isNaN(value) || value < min)
    throw new UsageError(`${name} must be a number of at least ${min} (got ${String(value)})`);
  return value;
}

/** What one send puts on the wire. */
interface Outgoing {
  body: string;
  signedText?: string | undefined;
  messageId: string | undefined;
  skipReason?: string | undefined;
}

function requestOf(message: Record<string, unknown> | string | Uint8Array, mode: DestinationMode, stamps: ReturnType<typeof clockStamps>): Outgoing {
  if (typeof message === "string" || message instanceof Uint8Array) {
    const body = typeof message === "string" ? message : decodeUtf8(Buffer.from(message.buffer, message.byteOffset, message.byteLength));
    if (body === undefined) throw new InputError(`the body is ${NOT_UTF8}`);
    const first = mode === "actions" ? batchEvents(body)?.[0] : undefined;
    return { body, signedText: first === undefined ? undefined : JSON.stringify(first), messageId: undefined };
  }
  const prepared = prepareMessage(message, stamps, { mode });
  if (!prepared.ok) throw new InputError(`invalid message: ${prepared.error}`, { hint: "nothing was sent" });
  const { body, messageId, enabled, skipReason } = prepared.message;
  return { body, messageId, skipReason: enabled ? undefined : skipReason };
}

function skipped(request: Outgoing): SendReport {
  const { body, messageId, skipReason } = request;
  return { outcome: "skipped", skipReason, messageId, body, deliveredTo: undefined, attempts: 0, durationMs: 0, targets: [], history: [] };
}

function record(history: AttemptRecord[], event: DeliveryEvent): void {
  if (event.type === "response") history.push({ url: event.url, attempt: event.attempt, outcome: event.outcome, durationMs: event.durationMs });
  else if (event.type === "retry") {
    const last = history.findLast((entry) => entry.url === event.url && entry.attempt === event.attempt);
    if (last !== undefined) last.retryInMs = event.delayMs;
  }
}
