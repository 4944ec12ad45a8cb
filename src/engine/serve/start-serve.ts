import { startTrackingServer } from "../../adapters/tracking-server.js";
import type { Destination, DeliverySettings } from "../../config/resolve.js";
import { type Clock, clockStamps } from "../../core/clock.js";
import type { DeliveryEvent, DeliveryReport } from "../../core/deliver.js";
import type { SubscriptionRequest } from "../../core/destination/route.js";
import type { OutputWriteError } from "../../core/errors.js";
import { type MessageStamps, onlyTo, prepareMessage, type PrepareResult } from "../../core/message/prepare.js";
import { RecentIds } from "../../core/message/recent-ids.js";
import { browserSettings } from "../../core/message/tracking.js";
import { untrusted } from "../../core/untrusted.js";
import type { WaitReason } from "../deliverer.js";
import type { RunSummary } from "../run-deliveries.js";
import { GRACE_MS } from "../run-stop.js";
import type { DeliveryJob, JobOutcome } from "../delivery-job.js";
import { createAccept, type AcceptedRequest, type Source } from "./accept.js";
import type { EventStore } from "./event-store.js";
import { startForwarding, type Forwarding } from "./forwarders.js";
import { ServeMetrics } from "./metrics.js";
import { Pacer } from "./pacing.js";
import type { ReplicaWait } from "../../adapters/redis/queue.js";
import { RedisStore } from "./redis-store.js";
import { SpoolStore } from "./spool-store.js";
import { eventLabel, type JobMaker, type StoredEvent } from "./stored-event.js";

export type { AcceptedRequest } from "./accept.js";

export interface ServeOptions {
  host: string;
  port: number;
  /** Names besides its own that the operator's paths answer (--allow-host). */
  allowedHosts?: readonly string[] | undefined;
  settings: DeliverySettings;
  /** With `sources` in the config each write key selects its source; otherwise any key is taken. */
  bySource: boolean;
  dataDir: string;
  maxSpoolBytes: number;
  maxBodyBytes: number;
  /** Deliveries in flight at once, per source. */
  concurrency: number;
  /** How many recent messageIds per source a duplicate is looked for among. */
  dedupWindow: number;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  /** How long deliveries in flight may finish once `signal` aborts (default: the runner's). */
  graceMs?: number | undefined;
  /** What events are stamped with (receivedAt, a missing timestamp) and retries wait by. */
  clock: Clock;
  /** The messageIds of events that come without one. */
  newId: () => string;
  onRequest?: (request: AcceptedRequest) => void;
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined, destination: Destination) => void;
  /** Every attempt and answer (--verbose, the inspector); `request`: the subscription request it is of, with subscriptions. */
  onDeliveryEvent?: ((job: DeliveryJob, event: DeliveryEvent, destination: Destination, request?: SubscriptionRequest) => void) | undefined;
  /** A source's forwarding stopped (its dead-letter file or the spool could not be written). */
  onForwardingStopped?: (destination: Destination, error: OutputWriteError) => void;
  /** Redis Streams instead of the local spool: `redis://…`, and the partitions of a new queue. */
  queue?: { url: string; partitions?: number | undefined; wait?: ReplicaWait | undefined } | undefined;
  /** accept: answer the tracking API only; forward: deliver only; both (the default). */
  role?: "accept" | "forward" | "both" | undefined;
  /** With Redis: dead letters also to this file (they always go to the dead-letter stream). */
  deadLetterPath?: string | undefined;
  /** POST /retry cut this many retry waits short: for the log. */
  onRetried?: ((retried: number) => void) | undefined;
  /** A trouble that does not stop anything (Redis away for a moment): for the log. */
  onWarning?: (message: string) => void;
}

export interface ServeHandle {
  url: string;
  port: number;
  /** Events accepted by an earlier run and not yet delivered, now being delivered. */
  recovered: number;
  dataDir: string;
  /** Resolves once `signal` has stopped the server and the forwarders have ended. */
  done: Promise<RunSummary[]>;
  /** Deliveries waiting to retry, and why, per URL (none when this process does not forward). */
  waiting(): WaitReason[];
  /** Events accepted and not yet ended (delivered, skipped or dead-lettered), when the store can tell at once: the spool's, not Redis's. */
  backlog(): number | undefined;
  /** Every delivery waiting to retry tries again now (POST /retry, a key, SIGUSR1); returns how many. */
  retryNow(): number;
}

/**
 * `wh serve`: Segment's tracking API in front of the delivery engine. Accepting turns each
 * request into events and puts them in the store (the spool, or Redis) before answering 200; each
 * source's forwarder delivers from the store and records each end there. Events an earlier run
 * left in the store (a crash, kill -9) are delivered first.
 */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const sources: Source[] = options.settings.destinations.map((destination) => ({ destination, recent: new RecentIds(options.dedupWindow) }));
  const sourceOf = (name: string | null | undefined): Source | undefined =>
    options.bySource ? sources.find((source) => source.destination.source === name) : sources[0];
  const store = await openStore(options, (stored) => {
    if (typeof stored.event.messageId === "string") sourceOf(stored.source)?.recent.add(stored.event.messageId);
  });
  const metrics = new ServeMetrics();
  store.addMetrics(metrics.registry);
  const stamps = clockStamps(options.clock, options.newId);
  let forwarding: Forwarding | undefined;
  const retryNow = (): number => forwarding?.retryNow() ?? 0;
  let server: Awaited<ReturnType<typeof startTrackingServer>> | undefined;
  try {
    if (options.role !== "accept") forwarding = await startForwarding(store, jobMaker(sourceOf, sources, stamps), metrics, options);
    const retrying = (): number => forwarding?.retrying() ?? 0;
    const pacer = new Pacer(store, () => forwarding !== undefined && retrying() === 0);
    metrics.registry.gauge("wh_serve_retrying", "Deliveries waiting to retry a URL.", retrying);
    server = await startTrackingServer({
      closeGraceMs: options.graceMs ?? GRACE_MS,
      host: options.host,
      port: options.port,
      allowedHosts: options.allowedHosts,
      maxBodyBytes: options.maxBodyBytes,
      accept: createAccept({
        sources,
        bySource: options.bySource,
        accepting: options.role !== "forward",
        store,
        metrics,
        stamps,
        admit: () => pacer.admit(),
        onRequest: options.onRequest,
      }),
      onRefused: (path, refusal) => {
        metrics.requests.inc({ status: String(refusal.status) });
        options.onRequest?.({
          path: untrusted(path),
          status: refusal.status,
          source: undefined,
          accepted: 0,
          duplicates: 0,
          rejected: [],
          code: refusal.code,
          message: untrusted(refusal.message),
        });
      },
      settings: (writeKey, host) =>
        options.bySource && !sources.some((source) => source.destination.writeKey === writeKey)
          ? { status: 404, body: { success: false, code: "unknown_write_key", message: "unknown write key" } }
          : { status: 200, body: browserSettings(writeKey, host) },
      health: () => ({ status: "ok", role: options.role ?? "both", ...store.health(), retrying: retrying() }),
      retry: () => {
        const retried = retryNow();
        options.onRetried?.(retried);
        return retried;
      },
      metrics: async () => {
        await store.refreshMetrics();
        return metrics.registry.render();
      },
    });
  } catch (error) {
    await stop(forwarding, store).catch(() => undefined);
    throw error;
  }
  const listening = server;
  const done = (async (): Promise<RunSummary[]> => {
    if (!options.signal.aborted) await new Promise((resolve) => options.signal.addEventListener("abort", resolve, { once: true }));
    await listening.close();
    return stop(forwarding, store);
  })();
  return {
    url: listening.url,
    port: listening.port,
    recovered: store.recovered,
    dataDir: options.dataDir,
    done,
    waiting: () => forwarding?.waiting() ?? [],
    backlog: () => store.backlog(),
    retryNow,
  };
}

function openStore(options: ServeOptions, onRecovered: (stored: StoredEvent) => void): Promise<EventStore> {
  if (options.queue !== undefined) return RedisStore.connect({ ...options.queue, deadLetterPath: options.deadLetterPath, onWarning: options.onWarning });
  return SpoolStore.open({ dataDir: options.dataDir, maxBytes: options.maxSpoolBytes, onRecovered, onWarning: options.onWarning });
}

async function stop(forwarding: Forwarding | undefined, store: EventStore): Promise<RunSummary[]> {
  try {
    return (await forwarding?.stop()) ?? [];
  } finally {
    await store.close();
  }
}

/**
 * A delivery job for a stored event (a spool record, or a Redis entry), for the forwarder of its
 * source; an event of a source the config no longer has goes to the first, as invalid.
 */
function jobMaker(sourceOf: (name: string | null) => Source | undefined, sources: readonly Source[], stamps: MessageStamps): JobMaker {
  return (number, stored, preparedAlready) => {
    const own = sourceOf(stored.source);
    const destination = (own ?? (sources[0] as Source)).destination;
    const prepare = (): PrepareResult =>
      own === undefined
        ? { ok: false, kind: "invalid-message", error: `accepted for the source ${JSON.stringify(stored.source)}, which the config no longer has` }
        : onlyTo(
            preparedAlready ?? prepareMessage(stored.event, stamps, { mode: destination.mode, fromTrackingApi: true, filter: destination.filter }),
            stored.subscriptions,
          );
    let prepared: PrepareResult | undefined;
    const messageId = stored.event.messageId as string;
    const job: DeliveryJob = {
      number,
      // Written only into a dead-letter record: serialised then, not for every event.
      get original() {
        return JSON.stringify(stored.event);
      },
      // Prepared when the runner takes the job, not when it is read: what a forwarder reads ahead
      // of its runner (100 sources' worth with the webhooks down) is not built meanwhile.
      get prepared() {
        prepared ??= prepare();
        return prepared;
      },
      set prepared(routed) {
        prepared = routed;
      },
      // Made when a line prints it (its failure, --verbose, the terminal's delivered line), not for every event.
      get label() {
        return eventLabel(stored.event);
      },
      origin: { messageId, ...(stored.source === null ? {} : { source: stored.source }), receivedAt: stored.event.receivedAt },
    };
    return { destination, job };
  };
}
