import { setMaxListeners } from "node:events";
import type { Destination, DeliverySettings } from "../../config/resolve.js";
import type { Clock } from "../../core/clock.js";
import type { DeliveryEvent, DeliveryReport } from "../../core/deliver.js";
import type { SubscriptionRequest } from "../../core/destination/route.js";
import type { OutputWriteError } from "../../core/errors.js";
import { createDeliverer, type Sender, type WaitReason } from "../deliverer.js";
import { runDeliveries, type RunSummary } from "../run-deliveries.js";
import { routeJobs } from "../routed-run.js";
import { type DeliveryJob, type JobOutcome, skipKindOf } from "../delivery-job.js";
import type { EventStore } from "./event-store.js";
import type { ServeMetrics } from "./metrics.js";
import type { JobMaker } from "./stored-event.js";

export interface ForwardingOptions {
  settings: DeliverySettings;
  /** Deliveries in flight at once, per source. */
  concurrency: number;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  /** How long deliveries in flight may finish once `signal` aborts (default: the runner's). */
  graceMs?: number | undefined;
  /** What retries wait by, and an event's latency is measured from its receivedAt by. */
  clock: Clock;
  onOutcome?:
    | ((job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined, destination: Destination) => void)
    | undefined;
  onDeliveryEvent?: ((job: DeliveryJob, event: DeliveryEvent, destination: Destination, request?: SubscriptionRequest) => void) | undefined;
  onForwardingStopped?: ((destination: Destination, error: OutputWriteError) => void) | undefined;
}

export interface Forwarding {
  /** Deliveries waiting to retry a URL, over every source. */
  retrying(): number;
  /** Why they wait, per URL. */
  waiting(): WaitReason[];
  /** Ends every wait to retry now; returns how many were cut short. */
  retryNow(): number;
  /** Stops reading the store, lets what is in flight end, and closes the dead-letter logs. */
  stop(): Promise<RunSummary[]>;
}

/** Jobs held beyond those in flight, over every source (one source: the runner's own read-ahead). */
const SHARED_READ_AHEAD = 256;

/**
 * One forwarder per source: the shared runner (each user's events in order, retries for the
 * window, dead letters) over the jobs its store feeds it, recording each end in the store.
 */
export async function startForwarding(store: EventStore, makeJob: JobMaker, metrics: ServeMetrics, options: ForwardingOptions): Promise<Forwarding> {
  const { destinations } = options.settings;
  const deliverer = await createDeliverer(options.settings, { env: options.env, clock: options.clock });
  const senders: Sender[] = [];
  const closers: (() => void)[] = [];
  const runs: Promise<RunSummary>[] = [];
  let inputs: ReturnType<EventStore["feed"]> = new Map();
  // Every source's run listens for the stop. One listener on the command's signal relays it to a
  // signal of forwarding's own that they share: 100 sources on the command's signal passed Node's
  // 10 listeners and printed MaxListenersExceededWarning.
  const stopping = new AbortController();
  setMaxListeners(0, stopping.signal);
  const relayStop = (): void => stopping.abort();
  if (options.signal.aborted) stopping.abort();
  else options.signal.addEventListener("abort", relayStop, { once: true });
  closers.push(() => options.signal.removeEventListener("abort", relayStop));
  // Prepared jobs held beyond those in flight, shared by the sources: a source whose webhook is
  // down holds that many until it comes back, and 100 sources each holding a replay's 256 were
  // 25,600 events prepared for nothing. What a source reads ahead waits unprepared in its spool lane.
  const readAhead = destinations.length > 1 ? Math.ceil(SHARED_READ_AHEAD / destinations.length) : undefined;
  try {
    const logs = destinations.map((destination) => store.logs(destination));
    closers.push(...logs.map((log) => log.close));
    inputs = store.feed(destinations, makeJob);
    destinations.forEach((destination, index) => {
      const sender = deliverer.to(destination);
      senders.push(sender);
      const input = inputs.get(destination);
      if (input === undefined) return;
      const { journal, deadLetter } = logs[index] as (typeof logs)[number];
      const routed = destination.subscriptions;
      const run = runDeliveries(routed === undefined ? input.jobs : routeJobs(input.jobs, routed), {
        stopInput: input.stop,
        sender,
        concurrency: options.concurrency,
        readAhead,
        ordered: true,
        batchSize: destination.batchSize,
        ratePerSecond: undefined,
        journal,
        deadLetter,
        signal: stopping.signal,
        graceMs: options.graceMs,
        onDeliveryEvent:
          options.onDeliveryEvent === undefined ? undefined : (job, event, request) => options.onDeliveryEvent?.(job, event, destination, request),
        onOutcome: (job, outcome, report, reason) => {
          // A skip says its kind: wh_serve_events_total{outcome="skipped",skip="filtered"}.
          if (outcome !== "interrupted" && outcome !== "dry-run")
            metrics.ended.inc(outcome === "skipped" ? { outcome, skip: skipKindOf(job) ?? "integrations" } : { outcome });
          const receivedAt = (job.origin as { receivedAt?: string } | undefined)?.receivedAt;
          if (outcome === "delivered" && receivedAt !== undefined) metrics.latency.observe((options.clock.now() - Date.parse(receivedAt)) / 1_000);
          options.onOutcome?.(job, outcome, report, reason, destination);
        },
      });
      runs.push(
        run.then((summary) => {
          if (summary.writeError !== undefined) options.onForwardingStopped?.(destination, summary.writeError);
          return summary;
        }),
      );
    });
  } catch (error) {
    for (const close of closers) close();
    await deliverer.close();
    throw error;
  }
  // One deliverer for every source: each sender's figures are all of them (summing counted each n times).
  const all = senders[0];
  return {
    retrying: () => all?.retrying ?? 0,
    waiting: () => all?.waiting() ?? [],
    retryNow: () => deliverer.retryNow(),
    async stop() {
      for (const input of inputs.values()) input.stop();
      try {
        return await Promise.all(runs);
      } finally {
        await deliverer.close();
        for (const close of closers) close();
      }
    },
  };
}
