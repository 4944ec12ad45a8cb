import { randomUUID } from "node:crypto";
import * as z from "zod/mini";
import { systemClock } from "../../adapters/system-clock.js";
import { NOT_UTF8, decodeUtf8 } from "../../adapters/utf8.js";
import { parseFilters, parseWebhooks } from "../../config/schema.js";
import { loadEventFilter } from "../../adapters/tsub.js";
import type { EventFilter, FilterConfig } from "../../core/destination/filters.js";
import type { SkipKind } from "../../core/message/skip.js";
import { checkDeliveryShape, checkSchemeSecret, DEFAULT_RETRY_WINDOW_MS, type HttpMethod, webhookTarget } from "../../config/destination.js";
import type { Destination } from "../../config/resolve.js";
import { fanOutOf, withAnySignal } from "../../core/any-signal.js";
import { type Clock, clockStamps } from "../../core/clock.js";
import { type DeliveryEvent, type DeliveryReport, destinationTimeoutMs } from "../../core/deliver.js";
import { InputError, UsageError } from "../../core/errors.js";
import { type DestinationMode, prepareMessage } from "../../core/message/prepare.js";
import { batchEvents } from "../../core/sign.js";
import { createDeliverer } from "../../engine/deliverer.js";
import type { SubscriptionSet } from "../../core/destination/subscriptions.js";
import { loadSubscriptionSet, sendToSubscriptions, subscriptionDestination, type SubscriptionDelivery } from "./subscription-send.js";
import { type AttemptRecord, recordAttempt } from "./attempt-history.js";
import type { SigningScheme } from "../../core/standard-webhooks.js";

export type { AttemptRecord } from "./attempt-history.js";
import { aClock, aFunction, anAbortSignal, millisecondsOf, numberOf, parseSettings } from "../settings.js";

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
  /** Signs each body (X-Signature, or with scheme standard a whsec_ secret); without it nothing is signed. */
  sharedSecret?: string | undefined;
  /**
   * segment (default): X-Signature, Segment's hex HMAC-SHA1. standard: Standard Webhooks'
   * webhook-id (the messageId), webhook-timestamp (each attempt's) and webhook-signature.
   */
  scheme?: SigningScheme | undefined;
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
  /**
   * Destination filters, as Segment's Public API returns them (`{ if, actions, enabled, title }`),
   * applied to each message object before it is shaped; none by default. Raw bodies are not filtered.
   */
  filters?: readonly FilterConfig[] | undefined;
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

/** A DeliveryReport, with every attempt, and what was sent. */
export interface SendReport extends Omit<DeliveryReport, "outcome"> {
  /** skipped: the message's `integrations` turn the Webhooks destination off (or actions mode never sends its type), or a filter dropped it. */
  outcome: DeliveryReport["outcome"] | "skipped";
  skipReason?: string | undefined;
  /** Set when skipped: integrations, filtered (skipReason names the filter) or unmatched. */
  skipKind?: SkipKind | undefined;
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

const senderSettings = z.object({
  // Checked by the configuration file's rules (parseWebhooks), once each URL is a string.
  webhooks: z.optional(z.unknown()),
  // Checked by the config's subscription schema, then Segment's engines (loadSubscriptionSet).
  subscriptions: z.optional(z.unknown()),
  sharedSecret: z.optional(z.string().check(z.minLength(1, "must not be empty: give the secret, or leave it out to send unsigned"))),
  scheme: z.optional(z.enum(["segment", "standard"])),
  mode: z.optional(z.enum(["classic", "actions"])),
  method: z.optional(z.enum(["POST", "PUT", "PATCH"])),
  timeoutMs: z.optional(millisecondsOf(1)),
  retryWindowMs: z.optional(numberOf({ min: 0 })),
  maxAttempts: z.optional(numberOf({ min: 1, whole: true })),
  ca: z.optional(z.array(z.string())),
  cwd: z.optional(z.string()),
  env: z.optional(z.record(z.string(), z.optional(z.string()))),
  clock: z.optional(aClock()),
  newId: z.optional(aFunction<() => string>()),
  // Checked by the configuration file's rules (parseFilters).
  filters: z.optional(z.unknown()),
});

const sendOptions = z.object({ signal: z.optional(anAbortSignal()), onEvent: z.optional(aFunction<(event: DeliveryEvent) => void>()) });

/** The CLI's delivery engine behind one call: validation, signing, Segment's retry rules, --ca and proxies. */
export async function createWebhookSender(settings: WebhookSenderSettings): Promise<WebhookSender> {
  const checked = parseSettings(senderSettings, settings, "createWebhookSender(settings): settings");
  if (!checked.ok) throw new UsageError(checked.problem);
  const given = checked.value;
  const routed = given.subscriptions === undefined ? undefined : await loadSubscriptionSet(given.subscriptions);
  const destination = checkSchemeSecret(destinationOf(given, routed));
  const filter = await loadEventFilter(filtersOf(given.filters));
  const clock = given.clock ?? systemClock;
  const stamps = clockStamps(clock, given.newId ?? randomUUID);
  const deliverer = await createDeliverer(
    {
      configPath: undefined,
      destinations: [destination],
      caFiles: [...(given.ca ?? [])],
      cwd: given.cwd ?? process.cwd(),
      timeoutMs: destination.timeoutMs,
      retryWindowMs: given.retryWindowMs ?? DEFAULT_RETRY_WINDOW_MS,
      maxAttempts: given.maxAttempts ?? Number.POSITIVE_INFINITY,
    },
    { env: given.env ?? process.env, clock },
  );
  const closing = new AbortController();
  return {
    async send(message, options = {}) {
      const { signal, onEvent } = optionsOf(options);
      if (routed !== undefined)
        return sendToSubscriptions(message, { set: routed, destination, deliverer, stamps, filter, closing: closing.signal }, { signal, onEvent });
      const request = requestOf(message, destination.mode, stamps, filter);
      if (request.skipReason !== undefined) return skipped(request);
      const history: AttemptRecord[] = [];
      const deliver = (each: AbortSignal): Promise<DeliveryReport> =>
        deliverer.deliver(request.body, destination, {
          signal: each,
          signedText: request.signedText,
          onEvent: (event) => {
            recordAttempt(history, event);
            onEvent?.(event);
          },
        });
      const report = await fanOutOf(closing.signal).run((closed) =>
        signal === undefined ? deliver(closed) : fanOutOf(signal).run((own) => withAnySignal([own, closed], deliver)),
      );
      return { ...report, messageId: request.messageId, body: request.body, history };
    },
    close: () => {
      closing.abort();
      return deliverer.close();
    },
  };
}

function optionsOf(options: SendOptions): SendOptions {
  const checked = parseSettings(sendOptions, options, "send(message, options): options");
  if (!checked.ok) throw new UsageError(checked.problem);
  return checked.value;
}

function destinationOf(settings: z.output<typeof senderSettings>, routed: SubscriptionSet | undefined): Destination {
  if (routed !== undefined) return subscriptionDestination(settings, routed);
  if (settings.webhooks === undefined) throw new UsageError("give webhooks (the URLs to deliver to) or subscriptions");
  const mode = settings.mode ?? "classic";
  const method = settings.method ?? "POST";
  checkDeliveryShape({ mode, method, batchSize: 1 }, { mode: "mode", method: "method", batchSize: "batchSize" });
  const given: unknown[] = Array.isArray(settings.webhooks) ? settings.webhooks : [settings.webhooks];
  const checked = parseWebhooks(given.map(asWebhookEntry));
  if (!checked.ok) throw new UsageError(checked.issues.map((issue) => settingIssue("webhooks", issue)).join("; "));
  return {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: checked.value.map((hook) => webhookTarget(new URL(hook.url), hook.headers ?? {})),
    sharedSecret: settings.sharedSecret,
    secretOrigin: undefined,
    scheme: settings.scheme ?? "segment",
    mode,
    method,
    batchSize: 1,
    timeoutMs: settings.timeoutMs ?? destinationTimeoutMs(mode),
  };
}

function filtersOf(filters: unknown): FilterConfig[] | undefined {
  if (filters === undefined) return undefined;
  const checked = parseFilters(filters);
  if (!checked.ok) throw new UsageError(checked.issues.map((issue) => settingIssue("filters", issue)).join("; "));
  return checked.value;
}

/** An issue of a setting's schema under the setting's name: `filters[0].if: …` inside it, `filters: …` for the whole. */
function settingIssue(setting: string, issue: string): string {
  return issue.startsWith("[") ? `${setting}${issue}` : `${setting}: ${issue}`;
}

/** A WebhookUrl as the configuration file writes a webhook; anything else is left for its rules to refuse. */
function asWebhookEntry(hook: unknown): unknown {
  if (typeof hook === "string" || hook instanceof URL) return { url: String(hook) };
  if (typeof hook !== "object" || hook === null) return hook;
  const { url } = hook as { url?: unknown };
  return url instanceof URL ? { ...hook, url: String(url) } : hook;
}

/** What one send puts on the wire. */
interface Outgoing {
  body: string;
  signedText?: string | undefined;
  messageId: string | undefined;
  skipReason?: string | undefined;
  skipKind?: SkipKind | undefined;
}

function requestOf(
  message: Record<string, unknown> | string | Uint8Array,
  mode: DestinationMode,
  stamps: ReturnType<typeof clockStamps>,
  filter: EventFilter | undefined,
): Outgoing {
  if (typeof message === "string" || message instanceof Uint8Array) {
    const body = typeof message === "string" ? message : decodeUtf8(Buffer.from(message.buffer, message.byteOffset, message.byteLength));
    if (body === undefined) throw new InputError(`the body is ${NOT_UTF8}`);
    const first = mode === "actions" ? batchEvents(body)?.[0] : undefined;
    return { body, signedText: first === undefined ? undefined : JSON.stringify(first), messageId: undefined };
  }
  const prepared = prepareMessage(message, stamps, { mode, filter });
  if (!prepared.ok) throw new InputError(`invalid message: ${prepared.error}`, { hint: "nothing was sent" });
  const { body, messageId, enabled, skipReason, skipKind } = prepared.message;
  return enabled ? { body, messageId } : { body, messageId, skipReason, skipKind };
}

function skipped(request: Outgoing): SendReport {
  const { body, messageId, skipReason, skipKind } = request;
  return { outcome: "skipped", skipReason, skipKind, messageId, body, deliveredTo: undefined, attempts: 0, durationMs: 0, targets: [], history: [] };
}
