import type { Analytics } from "../library/analytics/analytics.js";
import type { BatchResult, QueuedMessage } from "../library/analytics/batch-sender.js";
import type { DeliveryReport } from "../core/deliver.js";
import type { Sender } from "./deliverer.js";
import type { RetryWaits } from "./retry-waits.js";

/**
 * Sends a run's events through the batching Analytics client (wh ingest): each event is queued
 * when the run starts it, and ends when the batch it went out in ends. A body is the message as
 * JSON, already validated by the caller. Aborting the run's signal stops the client's batches,
 * waiting retries included, so that a Ctrl-C ends within the grace period. `waits` must wrap the
 * client's clock: its batches' retry waits are counted there, and "retry now" cuts them short.
 */
export function analyticsSender(client: Analytics, abortClient: () => void, waits: RetryWaits): Sender & { endOfInput(): void } {
  const waiting = new Map<QueuedMessage, (report: DeliveryReport) => void>();
  const retrying = new Set<BatchResult["messages"]>();
  const settle = (result: BatchResult): void => {
    retrying.delete(result.messages);
    for (const message of result.messages) {
      waiting.get(message)?.(result.report);
      waiting.delete(message);
    }
  };
  client.on("success", settle);
  client.on("failure", settle);
  client.on("aborted", settle);
  // Emitted just before the batch's wait starts: the wait is announced to `waits` in time.
  client.on("retry", ({ messages, reason, giveUpAtMs }) => {
    retrying.add(messages);
    waits.announce(client.batchUrl, reason, giveUpAtMs);
  });
  let listening = false;
  // Once the input has ended, nothing more will fill a batch: what is queued goes at once (in
  // one batch per turn of the event loop, not one per event).
  let ended = false;
  let flushScheduled = false;
  const flushSoon = (): void => {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(() => {
      flushScheduled = false;
      void client.flush();
    });
  };
  return {
    endOfInput() {
      ended = true;
      flushSoon();
    },
    get retrying() {
      let count = 0;
      for (const messages of retrying) count += messages.length;
      return count;
    },
    waiting: () => waits.reasons(),
    retryNow: () => waits.retryNow(),
    send(body, signal) {
      if (!listening) {
        listening = true;
        signal.addEventListener("abort", abortClient, { once: true });
      }
      // A body is one message, or an array of them (a batch line of the HTTP API): it ends when all have.
      const parsed = JSON.parse(body) as { type: string } | { type: string }[];
      const ends = (Array.isArray(parsed) ? parsed : [parsed]).map(({ type, ...fields }) => {
        const message = client.enqueue(type, fields);
        return new Promise<DeliveryReport>((resolve) => waiting.set(message, resolve));
      });
      if (ended) flushSoon();
      return Promise.all(ends).then((reports) => reports.find((report) => report.outcome !== "delivered") ?? (reports[0] as DeliveryReport));
    },
  };
}
