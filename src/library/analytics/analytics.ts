import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { fitsInBatch } from "../../core/batch.js";
import { formatDurationMs } from "../../core/duration.js";
import { buildIngestMessage } from "../../core/message/ingest-message.js";
import { redactUrl } from "../../core/redact.js";
import { kindOf } from "../../core/arguments.js";
import { settlesWithin } from "../../adapters/settles-within.js";
import { VERSION } from "../../version.js";
import { AnalyticsError, closeTimeoutMs, resolveAnalyticsOptions, type AnalyticsOptions, type AnalyticsSettings } from "./analytics-options.js";
import { BatchSender, type AnalyticsEvents, type DeliveryFailure, type Pending, type QueuedMessage } from "./batch-sender.js";

/** The fields of every call, as the seed's messages name them. */
export interface CommonFields {
  context?: Record<string, unknown> | undefined;
  integrations?: Record<string, unknown> | undefined;
  /** ISO 8601; default now. */
  timestamp?: string | Date | undefined;
  /** Default a new UUID. */
  messageId?: string | undefined;
}
/** Who a message is about: a userId, an anonymousId, or both; none is a compile error (as in analytics-node). */
export type Identity = { userId: string; anonymousId?: string | undefined } | { userId?: string | undefined; anonymousId: string };
export type MessageFields = CommonFields & Identity;
export type IdentifyFields = MessageFields & { traits?: Record<string, unknown> | undefined };
export type TrackFields = MessageFields & { event: string; properties?: Record<string, unknown> | undefined };
export type PageFields = MessageFields & {
  name?: string | undefined;
  category?: string | undefined;
  properties?: Record<string, unknown> | undefined;
};
export type ScreenFields = PageFields;
export type GroupFields = MessageFields & { groupId: string; traits?: Record<string, unknown> | undefined };
export interface AliasFields extends CommonFields {
  userId: string;
  previousId: string;
  anonymousId?: string | undefined;
}

/** Called once per message, when its batch has ended: no error when delivered (analytics-node's per-call callback). */
export type Callback = (error?: DeliveryFailure, context?: { event: QueuedMessage }) => void;

const DEFAULT_CLOSE_TIMEOUT_MS = 75_000;

/**
 * The batching client of the seed's part B: calls are validated, queued in memory and sent in
 * batches to `{endpoint}/v1/batch`, flushed every `flushAt` messages, `flushAfterMs` after the
 * last flush, or before a batch would pass 500 KB. Retries use the destination's retry policy.
 * This is the batching; the options are checked in analytics-options.ts, and batches are sent
 * (HTTP, retries, turns) by BatchSender.
 */
export class Analytics extends EventEmitter<AnalyticsEvents> {
  private readonly settings: AnalyticsSettings;
  /** Stops every batch: the `signal` option, or close() past its time. */
  private readonly stopper = new AbortController();
  private readonly sender: BatchSender;
  private queue: Pending[] = [];
  private queueBytes = 0;
  private lastFlushAt: number;
  private timer: AbortController | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(options: AnalyticsOptions) {
    super();
    this.settings = resolveAnalyticsOptions(options);
    this.sender = new BatchSender(this.settings, this.stopper.signal, this);
    this.lastFlushAt = this.settings.clock.now();
    if (options.signal?.aborted) this.stopper.abort();
    else options.signal?.addEventListener("abort", () => this.stopper.abort(), { once: true });
  }

  identify(fields: IdentifyFields, callback?: Callback): QueuedMessage {
    return this.enqueue("identify", fields, callback);
  }

  track(fields: TrackFields, callback?: Callback): QueuedMessage {
    return this.enqueue("track", fields, callback);
  }

  page(fields: PageFields, callback?: Callback): QueuedMessage {
    return this.enqueue("page", fields, callback);
  }

  screen(fields: ScreenFields, callback?: Callback): QueuedMessage {
    return this.enqueue("screen", fields, callback);
  }

  group(fields: GroupFields, callback?: Callback): QueuedMessage {
    return this.enqueue("group", fields, callback);
  }

  alias(fields: AliasFields, callback?: Callback): QueuedMessage {
    return this.enqueue("alias", fields, callback);
  }

  /**
   * Validates and queues one message of any type (what the typed calls use). Throws
   * AnalyticsError (E_INVALID_MESSAGE, E_MESSAGE_TOO_LARGE, E_CLOSED); nothing invalid is queued.
   */
  enqueue(type: string, fields: object, callback?: Callback): QueuedMessage {
    if (this.closed) throw new AnalyticsError("E_CLOSED", "the client is closed (or closing): the message was not queued");
    const input = messageOf(type, fields, callback);
    const built = buildIngestMessage(
      input,
      { now: () => new Date(this.settings.clock.now()), newId: randomUUID },
      { name: "wh", version: VERSION },
      this.settings.keepOwnLibrary,
    );
    if (!built.ok) throw new AnalyticsError(built.code, built.error);
    const message: QueuedMessage = { type: built.type, messageId: built.messageId };
    if (!fitsInBatch(this.queue.length, this.queueBytes, built.bytes)) this.flushQueue("the next message would pass 500 KB");
    this.queue.push({ message, json: built.json, bytes: built.bytes, callback });
    this.queueBytes += built.bytes;
    this.settings.log?.(`analytics: enqueue ${message.type} ${message.messageId} (${this.queue.length}/${this.settings.flushAt} queued)`);
    if (this.queue.length >= this.settings.flushAt) this.flushQueue(`${this.queue.length} messages queued`);
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
    const timeoutMs = closeTimeoutMs("timeoutMs", options, DEFAULT_CLOSE_TIMEOUT_MS);
    if (this.closed) return { unsent: [] };
    this.closed = true;
    this.flushQueue("close()");
    try {
      // Wall-clock time, whatever clock the client was given: close() must end for its caller.
      if (!(await settlesWithin(this.settled(), timeoutMs))) {
        this.settings.log?.(`analytics: close() gave up after ${formatDurationMs(timeoutMs)} with ${this.inFlight.size} batches unsent`);
        this.stopper.abort();
        await this.settled();
      }
    } finally {
      this.timer?.abort();
      await this.settings.ownTransport?.close();
    }
    return { unsent: this.sender.takeUndelivered() };
  }

  /** analytics-node's name for close(): flushes, waits at most `timeout` ms (default 75 s), then stops what is left. */
  async closeAndFlush(options: { timeout?: number | undefined } = {}): Promise<void> {
    await this.close({ timeoutMs: closeTimeoutMs("timeout", options, DEFAULT_CLOSE_TIMEOUT_MS) });
  }

  /** Where batches go (`{endpoint}/v1/batch`), for reports: a password in it masked. */
  get batchUrl(): string {
    return redactUrl(this.settings.url);
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
    const delayMs = Math.max(0, this.lastFlushAt + this.settings.flushAfterMs - this.settings.clock.now());
    void this.settings.clock.sleep(delayMs, timer.signal).then(() => {
      if (timer.signal.aborted) return;
      this.timer = undefined;
      this.flushQueue(`${formatDurationMs(this.settings.flushAfterMs)} since the last flush`);
    });
  }

  private flushQueue(why: string): void {
    this.timer?.abort();
    this.timer = undefined;
    this.lastFlushAt = this.settings.clock.now();
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.queueBytes = 0;
    const sending = this.sender.send(batch, why).finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
  }
}

/**
 * A call's fields as a message of `type`, a Date timestamp as its ISO text. What the types forbid
 * (no object, a callback that is not a function, an invalid Date) is refused here, before it
 * could fail as a TypeError, or later when its batch ends.
 */
function messageOf(type: string, fields: unknown, callback: unknown): Record<string, unknown> {
  if (typeof fields !== "object" || fields === null || Array.isArray(fields))
    throw new AnalyticsError("E_INVALID_MESSAGE", `${type}(fields): fields must be an object of the message's fields (got ${kindOf(fields)})`);
  if (callback !== undefined && typeof callback !== "function")
    throw new AnalyticsError("E_INVALID_OPTION", `${type}(fields, callback): callback must be a function (got ${kindOf(callback)})`);
  const { timestamp } = fields as { timestamp?: unknown };
  if (!(timestamp instanceof Date)) return { ...fields, type };
  if (Number.isNaN(timestamp.getTime())) throw new AnalyticsError("E_INVALID_MESSAGE", "timestamp: an invalid Date");
  return { ...fields, type, timestamp: timestamp.toISOString() };
}
