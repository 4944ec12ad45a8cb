import type { EventEmitter } from "node:events";
import { fanOutOf } from "../../core/any-signal.js";
import { batchBody } from "../../core/batch.js";
import { deliverMessage, describeOutcome, type DeliveryEvent, type DeliveryReport } from "../../core/deliver.js";
import { formatDurationMs } from "../../core/duration.js";
import type { IngestType } from "../../core/message/ingest-message.js";
import { DEFAULT_RETRY_POLICY } from "../../core/retry-policy.js";
import { USER_AGENT } from "../../version.js";
import type { AnalyticsSettings } from "./analytics-options.js";

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
  /**
   * A batch failed for good, as analytics-node emits it (beside "failure"). Emitted only while
   * someone listens: an "error" event nobody listens to would throw.
   */
  error: [DeliveryFailure];
}

/** Why a batch's messages were not delivered, in analytics-node's shape (`code`, `reason`) with wh's report. */
export interface DeliveryFailure {
  code: "delivery_failure";
  /** What the last attempt came to, as text. */
  reason: string;
  outcome: "failed" | "aborted";
  messages: QueuedMessage[];
  report: DeliveryReport;
}

/** A queued message and its JSON, as it goes into a batch body. */
export interface Pending {
  message: QueuedMessage;
  json: string;
  bytes: number;
  /** The call's own callback, told when its batch ends. */
  callback?: ((error?: DeliveryFailure, context?: { event: QueuedMessage }) => void) | undefined;
}

/** A Retry-After longer than this is waited only this long: the batch is neither held for an hour nor dropped. */
const MAX_RETRY_AFTER_MS = 300_000;
/**
 * Batches being sent at once; later ones wait their turn (their timeout starts when they go). Each
 * holds a connection: a burst of 100,000 calls must not open 5,000 sockets and run out of
 * descriptors.
 */
const MAX_BATCHES_IN_FLIGHT = 16;

/**
 * The Analytics client's HTTP side: sends each batch to `{endpoint}/v1/batch` with the
 * destination's retry policy, MAX_BATCHES_IN_FLIGHT at a time, and emits its outcome.
 */
export class BatchSender {
  /** Batches flushed and waiting for one of the MAX_BATCHES_IN_FLIGHT turns. */
  private readonly waitingTurns: (() => void)[] = [];
  private sending = 0;
  /** Messages of the batches that failed or were stopped since they were last taken. */
  private undelivered: QueuedMessage[] = [];

  constructor(
    private readonly settings: AnalyticsSettings,
    /** Stops every batch: the `signal` option, or close() past its time. */
    private readonly stopAll: AbortSignal,
    private readonly events: EventEmitter<AnalyticsEvents>,
  ) {}

  /** Sends a batch once it has its turn; resolves when it has ended (delivered, failed or stopped). */
  async send(batch: Pending[], why: string): Promise<void> {
    if (this.sending >= MAX_BATCHES_IN_FLIGHT) await new Promise<void>((resolve) => this.waitingTurns.push(resolve));
    this.sending += 1;
    try {
      await this.sendBatch(batch, why);
    } finally {
      this.sending -= 1;
      this.waitingTurns.shift()?.();
    }
  }

  /** The messages of the batches that failed or were stopped since the last call. */
  takeUndelivered(): QueuedMessage[] {
    const undelivered = this.undelivered;
    this.undelivered = [];
    return undelivered;
  }

  private async sendBatch(batch: Pending[], why: string): Promise<void> {
    const { clock, log } = this.settings;
    const messages = batch.map((pending) => pending.message);
    const jsons = batch.map((pending) => pending.json);
    // sentAt is the moment of each attempt (Segment corrects clocks with it), and a retry says
    // which it is in X-Retry-Count, as Segment's own libraries do.
    const bodyAt = (): string => batchBody(jsons, new Date(clock.now()).toISOString());
    const body = bodyAt();
    const bytes = Buffer.byteLength(body);
    log?.(`analytics: flush ${messages.length} messages, ${bytes} bytes (${why})`);
    const report = await fanOutOf(this.stopAll).run((signal) =>
      deliverMessage(body, {
        targets: [{ url: this.settings.url, headers: { Authorization: this.settings.authorization } }],
        transport: this.settings.transport,
        clock,
        policy: { ...DEFAULT_RETRY_POLICY, maxAttempts: this.settings.maxAttempts, maxRetryAfterMs: MAX_RETRY_AFTER_MS },
        timeoutMs: this.settings.timeoutMs,
        userAgent: USER_AGENT,
        signal,
        perAttempt: (attempt): { body: string; headers: Record<string, string> } =>
          attempt === 1 ? { body, headers: {} } : { body: bodyAt(), headers: { "X-Retry-Count": String(attempt - 1) } },
        onEvent: (event) => this.onDeliveryEvent(event, messages),
      }),
    );
    this.ended({ messages, bytes, report }, batch);
  }

  private ended(result: BatchResult, batch: Pending[]): void {
    const { report, messages } = result;
    const target = report.targets[0];
    const failure: DeliveryFailure | undefined =
      report.outcome === "delivered"
        ? undefined
        : {
            code: "delivery_failure",
            reason: `${describeOutcome(target?.last)}${target?.reason === undefined ? "" : ` (${target.reason})`}`,
            outcome: report.outcome,
            messages,
            report,
          };
    if (failure !== undefined) this.undelivered.push(...messages);
    if (report.outcome === "delivered") this.events.emit("success", result);
    else if (report.outcome === "aborted") this.events.emit("aborted", result);
    else {
      this.settings.log?.(`analytics: batch of ${messages.length} failed: ${failure?.reason}`);
      this.events.emit("failure", result);
      if (failure !== undefined && this.events.listenerCount("error") > 0) this.events.emit("error", failure);
    }
    for (const pending of batch) pending.callback?.(failure, { event: pending.message });
  }

  private onDeliveryEvent(event: DeliveryEvent, messages: QueuedMessage[]): void {
    const log = this.settings.log;
    if (event.type === "response")
      log?.(`analytics: response ${describeOutcome(event.outcome)} in ${formatDurationMs(event.durationMs)} (attempt ${event.attempt})`);
    if (event.type === "retry") {
      log?.(`analytics: retry in ${formatDurationMs(event.delayMs)}`);
      this.events.emit("retry", {
        messages,
        attempt: event.attempt,
        delayMs: event.delayMs,
        reason: describeOutcome(event.outcome),
        giveUpAtMs: event.giveUpAtMs,
      });
    }
  }
}
