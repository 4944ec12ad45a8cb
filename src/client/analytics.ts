import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { systemClock } from "../adapters/system-clock.js";
import { createUndiciTransport, type ClosableTransport } from "../adapters/undici-transport.js";
import { batchBody, fitsInBatch } from "../core/batch.js";
import type { Clock } from "../core/clock.js";
import { deliverMessage, describeOutcome, type DeliveryEvent, type DeliveryReport, type HttpTransport } from "../core/deliver.js";
import { formatDurationMs } from "../core/duration.js";
import { redactUrl } from "../core/redact.js";
import { WhError } from "../core/errors.js";
import { buildIngestMessage, type IngestType } from "../core/message/ingest-message.js";
import { DEFAULT_RETRY_POLICY } from "../core/retry-policy.js";
import { USER_AGENT, VERSION } from "../version.js";

export type AnalyticsErrorCode = "E_INVALID_MESSAGE" | "E_MESSAGE_TOO_LARGE" | "E_CLOSED" | "E_NO_ENDPOINT" | "E_NO_WRITE_KEY" | "E_INVALID_OPTION";

/** Thrown by the client's calls; `code` says which rule was broken. */
export class AnalyticsError extends WhError {
  declare readonly code: AnalyticsErrorCode;

  constructor(code: AnalyticsErrorCode, message: string) {
    super(code, message, 2);
  }
}

export interface AnalyticsOptions {
  /** The source's write key: sent as the HTTP basic-auth user. */
  writeKey: string;
  /** Base URL of a Segment-compatible ingestion API; batches go to `{endpoint}/v1/batch`. Default: WH_ENDPOINT. */
  endpoint?: string | undefined;
  /** Flush when this many messages are queued. Default 20; 1 sends every message at once. */
  flushAt?: number | undefined;
  /** Alias of flushAt, as the Go library's Size. */
  size?: number | undefined;
  /** Flush when this long has passed since the last flush. Default 5000. */
  flushAfterMs?: number | undefined;
  /** Attempts per batch at most, the first included. Default 10. */
  maxAttempts?: number | undefined;
  /** Time allowed for each batch request's whole response. Default 10000. */
  timeoutMs?: number | undefined;
  /** Log to stderr (or to `logger`): default on when DEBUG=analytics. */
  debug?: boolean | undefined;
  logger?: ((line: string) => void) | undefined;
  transport?: HttpTransport | undefined;
  clock?: Clock | undefined;
  /** Aborting stops every batch in flight, its retries included: those batches emit "aborted". */
  signal?: AbortSignal | undefined;
}

/** The fields of a call, as the seed's messages name them. */
export interface MessageFields {
  userId?: string | undefined;
  anonymousId?: string | undefined;
  context?: Record<string, unknown> | undefined;
  integrations?: Record<string, unknown> | undefined;
  /** ISO 8601; default now. */
  timestamp?: string | Date | undefined;
  /** Default a new UUID. */
  messageId?: string | undefined;
}
export interface IdentifyFields extends MessageFields {
  traits?: Record<string, unknown> | undefined;
}
export interface TrackFields extends MessageFields {
  event: string;
  properties?: Record<string, unknown> | undefined;
}
export interface PageFields extends MessageFields {
  name?: string | undefined;
  category?: string | undefined;
  properties?: Record<string, unknown> | undefined;
}
export type ScreenFields = PageFields;
export interface GroupFields extends MessageFields {
  groupId: string;
  traits?: Record<string, unknown> | undefined;
}
export interface AliasFields extends MessageFields {
  userId: string;
  previousId: string;
}

/** A message accepted into the queue. */
export interface QueuedMessage {
  type: IngestType;
  messageId: string;
}

/** One batch request's outcome. */
export interface BatchResult {
  messages: QueuedMessage[];
  bytes: number;
  report: DeliveryReport;
}

export interface AnalyticsEvents {
  /** A batch was accepted (2xx). */
  success: [BatchResult];
  /** A batch failed for good (a final status, or attempts used up). */
  failure: [BatchResult];
  /** A batch will be sent again after delayMs. */
  retry: [{ messages: QueuedMessage[]; attempt: number; delayMs: number; reason: string; giveUpAtMs: number }];
  /** A batch was stopped by the `signal` option before it ended: neither sent nor failed. */
  aborted: [BatchResult];
}

interface Pending {
  message: QueuedMessage;
  json: string;
  bytes: number;
}

const DEFAULT_FLUSH_AT = 20;
const DEFAULT_CLOSE_TIMEOUT_MS = 75_000;
/** A Retry-After longer than this is waited only this long: the batch is neither held for an hour nor dropped. */
const MAX_RETRY_AFTER_MS = 300_000;
const DEFAULT_FLUSH_AFTER_MS = 5_000;
/**
 * Batches being sent at once; later ones wait their turn (their timeout starts when they go). Each
 * holds a connection: a burst of 100,000 calls must not open 5,000 sockets and run out of
 * descriptors.
 */
const MAX_BATCHES_IN_FLIGHT = 16;

/**
 * The batching client of the seed's part B: calls are validated, queued in memory and sent in
 * batches to `{endpoint}/v1/batch`, flushed every `flushAt` messages, `flushAfterMs` after the
 * last flush, or before a batch would pass 500 KB. Retries use the destination's retry policy.
 */
export class Analytics extends EventEmitter<AnalyticsEvents> {
  private readonly url: URL;
  private readonly authorization: string;
  private readonly flushAt: number;
  private readonly flushAfterMs: number;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly transport: HttpTransport;
  private readonly ownTransport: ClosableTransport | undefined;
  private readonly log: ((line: string) => void) | undefined;
  /** Stops every batch: the `signal` option, or close() past its time. */
  private readonly stopper = new AbortController();
  private queue: Pending[] = [];
  private queueBytes = 0;
  private lastFlushAt: number;
  private timer: AbortController | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Batches flushed and waiting for one of the MAX_BATCHES_IN_FLIGHT turns. */
  private readonly waitingTurns: (() => void)[] = [];
  private sending = 0;
  /** Messages of the batches that failed or were stopped since the last close(): close() reports them. */
  private undelivered: QueuedMessage[] = [];
  private closed = false;

  constructor(options: AnalyticsOptions) {
    super();
    if (typeof options.writeKey !== "string" || options.writeKey === "") throw new AnalyticsError("E_NO_WRITE_KEY", "a write key is required");
    const endpoint = options.endpoint ?? process.env.WH_ENDPOINT;
    if (endpoint === undefined || endpoint === "") {
      throw new AnalyticsError("E_NO_ENDPOINT", "an endpoint is required: pass { endpoint } or set WH_ENDPOINT (the service's own address is not built in)");
    }
    let base: URL;
    try {
      base = new URL(endpoint);
    } catch {
      throw new AnalyticsError("E_NO_ENDPOINT", `endpoint ${JSON.stringify(endpoint)} is not an absolute URL`);
    }
    if (base.protocol !== "http:" && base.protocol !== "https:") throw new AnalyticsError("E_NO_ENDPOINT", `endpoint ${JSON.stringify(endpoint)} is not an http or https URL`);
    this.url = new URL(`${base.pathname.replace(/\/+$/, "")}/v1/batch`, base);
    this.authorization = `Basic ${Buffer.from(`${options.writeKey}:`).toString("base64")}`;
    this.flushAt = positive("flushAt", options.flushAt ?? options.size ?? DEFAULT_FLUSH_AT);
    this.flushAfterMs = positive("flushAfterMs", options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS);
    this.maxAttempts = positive("maxAttempts", options.maxAttempts ?? 10);
    this.timeoutMs = positive("timeoutMs", options.timeoutMs ?? 10_000);
    this.clock = options.clock ?? systemClock;
    this.ownTransport = options.transport === undefined ? createUndiciTransport({ env: process.env, connectTimeoutMs: this.timeoutMs }) : undefined;
    this.transport = options.transport ?? (this.ownTransport as ClosableTransport);
    const debug = options.debug ?? isDebugEnabled(process.env.DEBUG);
    this.log = debug ? (options.logger ?? ((line) => process.stderr.write(`${line}\n`))) : undefined;
    this.lastFlushAt = this.clock.now();
    if (options.signal?.aborted) this.stopper.abort();
    else options.signal?.addEventListener("abort", () => this.stopper.abort(), { once: true });
  }

  identify(fields: IdentifyFields): QueuedMessage {
    return this.enqueue("identify", fields);
  }

  track(fields: TrackFields): QueuedMessage {
    return this.enqueue("track", fields);
  }

  page(fields: PageFields): QueuedMessage {
    return this.enqueue("page", fields);
  }

  screen(fields: ScreenFields): QueuedMessage {
    return this.enqueue("screen", fields);
  }

  group(fields: GroupFields): QueuedMessage {
    return this.enqueue("group", fields);
  }

  alias(fields: AliasFields): QueuedMessage {
    return this.enqueue("alias", fields);
  }

  /**
   * Validates and queues one message of any type (what the typed calls use). Throws
   * AnalyticsError (E_INVALID_MESSAGE, E_MESSAGE_TOO_LARGE, E_CLOSED); nothing invalid is queued.
   */
  enqueue(type: string, fields: object): QueuedMessage {
    if (this.closed) throw new AnalyticsError("E_CLOSED", "the client is closed (or closing): the message was not queued");
    const input = { ...fields, type, ...("timestamp" in fields && fields.timestamp instanceof Date ? { timestamp: fields.timestamp.toISOString() } : {}) };
    const built = buildIngestMessage(input, { now: () => new Date(this.clock.now()), newId: randomUUID }, { name: "wh", version: VERSION });
    if (!built.ok) throw new AnalyticsError(built.code, built.error);
    const message: QueuedMessage = { type: built.type, messageId: built.messageId };
    if (!fitsInBatch(this.queue.length, this.queueBytes, built.bytes)) this.flushQueue("the next message would pass 500 KB");
    this.queue.push({ message, json: built.json, bytes: built.bytes });
    this.queueBytes += built.bytes;
    this.log?.(`analytics: enqueue ${message.type} ${message.messageId} (${this.queue.length}/${this.flushAt} queued)`);
    if (this.queue.length >= this.flushAt) this.flushQueue(`${this.queue.length} messages queued`);
    else this.armTimer();
    return message;
  }

  /** Sends what is queued and waits for every batch in flight. */
  async flush(): Promise<void> {
    this.flushQueue("flush()");
    await this.settled();
  }

  /**
   * Flushes what is queued, waits for it for at most `timeoutMs` (default 75 s), and stops the
   * timer. A call made once close() has begun throws E_CLOSED: nothing is queued and forgotten.
   * Resolves with every message the client could not send: those of batches that failed (each
   * also emitted "failure") and those stopped at the timeout ("aborted"); an empty list when
   * everything was delivered.
   */
  async close(options: { timeoutMs?: number | undefined } = {}): Promise<{ unsent: QueuedMessage[] }> {
    if (this.closed) return { unsent: [] };
    this.closed = true;
    const timeoutMs = positive("timeoutMs", options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    this.flushQueue("close()");
    // Wall-clock time, whatever clock the client was given: close() must end for its caller.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeoutMs);
    });
    try {
      if (await Promise.race([this.settled().then(() => false), timedOut])) {
        this.log?.(`analytics: close() gave up after ${formatDurationMs(timeoutMs)} with ${this.inFlight.size} batches unsent`);
        this.stopper.abort();
        await this.settled();
      }
    } finally {
      clearTimeout(timer);
      this.timer?.abort();
      await this.ownTransport?.close();
    }
    const unsent = this.undelivered;
    this.undelivered = [];
    return { unsent };
  }

  /** Where batches go (`{endpoint}/v1/batch`), for reports: a password in it masked. */
  get batchUrl(): string {
    return redactUrl(this.url);
  }

  /** Batches being sent now (including their retries). */
  get pendingBatches(): number {
    return this.inFlight.size;
  }

  /** Resolves when no batch is in flight. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
  }

  private armTimer(): void {
    if (this.timer !== undefined || this.queue.length === 0) return;
    const timer = new AbortController();
    this.timer = timer;
    const delayMs = Math.max(0, this.lastFlushAt + this.flushAfterMs - this.clock.now());
    void this.clock.sleep(delayMs, timer.signal).then(() => {
      if (timer.signal.aborted) return;
      this.timer = undefined;
      this.flushQueue(`${formatDurationMs(this.flushAfterMs)} since the last flush`);
    });
  }

  private flushQueue(why: string): void {
    this.timer?.abort();
    this.timer = undefined;
    this.lastFlushAt = this.clock.now();
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.queueBytes = 0;
    const sending = this.send(batch, why).finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
  }

  private async send(batch: Pending[], why: string): Promise<void> {
    if (this.sending >= MAX_BATCHES_IN_FLIGHT) await new Promise<void>((resolve) => this.waitingTurns.push(resolve));
    this.sending += 1;
    try {
      await this.sendBatch(batch, why);
    } finally {
      this.sending -= 1;
      this.waitingTurns.shift()?.();
    }
  }

  private async sendBatch(batch: Pending[], why: string): Promise<void> {
    const messages = batch.map((pending) => pending.message);
    const jsons = batch.map((pending) => pending.json);
    // sentAt is the moment of each attempt (Segment corrects clocks with it), and a retry says
    // which it is in X-Retry-Count, as Segment's own libraries do.
    const bodyAt = (): string => batchBody(jsons, new Date(this.clock.now()).toISOString());
    const body = bodyAt();
    const bytes = Buffer.byteLength(body);
    this.log?.(`analytics: flush ${messages.length} messages, ${bytes} bytes (${why})`);
    const report = await deliverMessage(body, {
      targets: [{ url: this.url, headers: { Authorization: this.authorization } }],
      transport: this.transport,
      clock: this.clock,
      policy: { ...DEFAULT_RETRY_POLICY, maxAttempts: this.maxAttempts, maxRetryAfterMs: MAX_RETRY_AFTER_MS },
      timeoutMs: this.timeoutMs,
      userAgent: USER_AGENT,
      signal: this.stopper.signal,
      perAttempt: (attempt): { body: string; headers: Record<string, string> } =>
        attempt === 1 ? { body, headers: {} } : { body: bodyAt(), headers: { "X-Retry-Count": String(attempt - 1) } },
      onEvent: (event) => this.onDeliveryEvent(event, messages),
    });
    const result: BatchResult = { messages, bytes, report };
    if (report.outcome !== "delivered") this.undelivered.push(...messages);
    if (report.outcome === "delivered") this.emit("success", result);
    else if (report.outcome === "aborted") this.emit("aborted", result);
    else {
      const target = report.targets[0];
      this.log?.(`analytics: batch of ${messages.length} failed: ${describeOutcome(target?.last)}${target?.reason === undefined ? "" : ` (${target.reason})`}`);
      this.emit("failure", result);
    }
  }

  private onDeliveryEvent(event: DeliveryEvent, messages: QueuedMessage[]): void {
    if (event.type === "response") this.log?.(`analytics: response ${describeOutcome(event.outcome)} in ${formatDurationMs(event.durationMs)} (attempt ${event.attempt})`);
    if (event.type === "retry") {
      this.log?.(`analytics: retry in ${formatDurationMs(event.delayMs)}`);
      this.emit("retry", { messages, attempt: event.attempt, delayMs: event.delayMs, reason: describeOutcome(event.outcome), giveUpAtMs: event.giveUpAtMs });
    }
  }
}

/** DEBUG=analytics (alone or in a comma- or space-separated list) turns logging on. */
export function isDebugEnabled(debug: string | undefined): boolean {
  return debug !== undefined && debug.split(/[\s,]+/).includes("analytics");
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 1) throw new AnalyticsError("E_INVALID_OPTION", `${name} must be a number of at least 1`);
  return value;
}
