import { randomUUID } from "node:crypto";
import { systemClock } from "../adapters/system-clock.js";
import { NOT_UTF8, decodeUtf8 } from "../adapters/utf8.js";
import { parseFilters, parseWebhooks } from "../config/schema.js";
import { loadEventFilter } from "../adapters/tsub.js";
import type { EventFilter, FilterConfig } from "../core/destination/filters.js";
import type { SkipKind } from "../core/message/skip.js";
import { checkDeliveryShape, DEFAULT_RETRY_WINDOW_MS, type HttpMethod, webhookTarget } from "../config/destination.js";
import type { Destination } from "../config/resolve.js";
import { fanOutOf, withAnySignal } from "../core/any-signal.js";
import { type Clock, clockStamps } from "../core/clock.js";
import { type DeliveryEvent, type DeliveryReport, destinationTimeoutMs } from "../core/deliver.js";
import { ConfigError, InputError, UsageError } from "../core/errors.js";
import { type DestinationMode, prepareMessage } from "../core/message/prepare.js";
import type { AttemptOutcome } from "../core/retry-policy.js";
import { batchEvents } from "../core/sign.js";
import { createDeliverer } from "../engine/deliverer.js";

/** One webhook URL, with the static headers sent to it. */
export type WebhookUrl = string | URL | { url: string | URL; headers?: Record<string, string> | undefined };

/** What `wh send` takes from its flags and config, as options; each default is the CLI's. */
export interface WebhookSenderSettings {
  /** Where to deliver: one URL or up to five (a message is delivered once one answers 2xx). */
  webhooks: WebhookUrl | readonly WebhookUrl[];
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
  /**
   * Destination filters, as Segment's Public API returns them (`{ if, actions, enabled, title }`),
   * applied to each message object before it is shaped; none by default. Raw bodies are not filtered.
   */
  filters?: readonly FilterConfig[] | undefined;
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
  /** skipped: the message's `integrations` turn the Webhooks destination off (or actions mode never sends its type), or a filter dropped it. */
  outcome: DeliveryReport["outcome"] | "skipped";
  skipReason?: string | undefined;
  /** Set when skipped: integrations, filtered (skipReason names the filter) or unmatched. */
  skipKind?: SkipKind | undefined;
  messageId: string | undefined;
  /** The exact bytes sent (and signed, unless an Actions batch: its first event). */
  body: string;
  history: AttemptRecord[];
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
  const destination = destinationOf(settings);
  const filter = await loadEventFilter(filtersOf(settings));
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
      const request = requestOf(message, destination.mode, stamps, filter);
      if (request.skipReason !== undefined) return skipped(request);
      const history: AttemptRecord[] = [];
      const deliver = (signal: AbortSignal): Promise<DeliveryReport> =>
        deliverer.deliver(request.body, destination, {
          signal,
          signedText: request.signedText,
          onEvent: (event) => {
            record(history, event);
            options.onEvent?.(event);
          },
        });
      const given = options.signal;
      const report = await fanOutOf(closing.signal).run((closed) =>
        given === undefined ? deliver(closed) : fanOutOf(given).run((own) => withAnySignal([own, closed], deliver)),
      );
      return { ...report, messageId: request.messageId, body: request.body, history };
    },
    close: () => {
      closing.abort();
      return deliverer.close();
    },
  };
}

function destinationOf(settings: WebhookSenderSettings): Destination {
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

function filtersOf(settings: WebhookSenderSettings): FilterConfig[] | undefined {
  if (settings.filters === undefined) return undefined;
  const checked = parseFilters(settings.filters);
  if (!checked.ok)
    throw new ConfigError(
      checked.issues.map((issue) => `filters${issue}`),
      { source: "the sender's settings" },
    );
  return checked.value;
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

function record(history: AttemptRecord[], event: DeliveryEvent): void {
  if (event.type === "response") history.push({ url: event.url, attempt: event.attempt, outcome: event.outcome, durationMs: event.durationMs });
  else if (event.type === "retry") {
    const last = history.findLast((entry) => entry.url === event.url && entry.attempt === event.attempt);
    if (last !== undefined) last.retryInMs = event.delayMs;
  }
}
