import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { AppendFile } from "../adapters/append-file.js";
import { Spool, type SpoolRecord } from "../adapters/spool.js";
import { startTrackingServer, type TrackingAnswer, type TrackingRequest } from "../adapters/tracking-server.js";
import type { Destination, DeliverySettings } from "../config/resolve.js";
import type { DeliveryEvent, DeliveryReport } from "../core/deliver.js";
import { OutputWriteError } from "../core/errors.js";
import { prepareMessage, type PrepareResult } from "../core/message/prepare.js";
import { maskHeaders } from "../core/capture.js";
import { expandRequest, RecentIds } from "../core/message/tracking.js";
import { Registry } from "../core/prometheus.js";
import { createDeliverer, type Sender } from "./deliverer.js";
import { JobQueue } from "./job-queue.js";
import { runDeliveries, type DeliveryJob, type JobOutcome, type RunSummary } from "./run-deliveries.js";

/** How long a client is asked to wait before retrying a 503 (full spool or disk). */
export const RETRY_AFTER_SECONDS = 5;

export interface ServeOptions {
  host: string;
  port: number;
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
  onRequest?: (request: AcceptedRequest) => void;
  onOutcome?: (job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason: string | undefined, destination: Destination) => void;
  /** Every attempt and answer (--verbose); absent, nothing is built for it. */
  onDeliveryEvent?: ((job: DeliveryJob, event: DeliveryEvent, destination: Destination) => void) | undefined;
  /** A source's forwarding stopped (its dead-letter file or the spool could not be written). */
  onForwardingStopped?: (destination: Destination, error: OutputWriteError) => void;
}

/** What became of one request to the tracking API. */
export interface AcceptedRequest {
  path: string;
  status: number;
  source: string | undefined;
  accepted: number;
  duplicates: number;
  /** Why it was refused, for statuses other than 200. */
  message?: string;
  /** The events accepted (as enriched), each with its number in the spool. */
  events?: { seq: number; event: Record<string, unknown> }[];
  /** The request's headers, credentials masked. */
  headers?: Record<string, string>;
}

export interface ServeHandle {
  url: string;
  port: number;
  /** Events accepted by an earlier run and not yet delivered, now being delivered. */
  recovered: number;
  dataDir: string;
  deadLetterPaths: string[];
  /** Resolves once `signal` has stopped the server and the forwarders have ended. */
  done: Promise<RunSummary[]>;
}

interface Forwarder {
  destination: Destination;
  sender: Sender;
  queue: JobQueue;
  recent: RecentIds;
  deadLetter: AppendFile;
  run: Promise<RunSummary>;
}

/** A spooled event: its source and the event as the pipeline enriched it. */
interface SpooledEvent {
  source: string | null;
  event: Record<string, unknown>;
}

/**
 * `wh serve`: Segment's tracking API in front of the delivery engine. An accepted request is on
 * disk (the spool) before it is answered 200; each source's forwarder delivers from there with the
 * shared runner (each user's events in order, retries for the window, dead letters) and marks
 * each event in the spool when it has ended. Events left in the spool by an earlier run (a crash,
 * kill -9) are delivered first.
 */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const { spool, unfinished } = Spool.open(join(options.dataDir, "spool"), { maxBytes: options.maxSpoolBytes });
  const stamps = { now: () => new Date(), newId: randomUUID };
  const metrics = new Registry();
  const requests = metrics.counter("wh_serve_requests_total", "Requests to the tracking API, by HTTP status answered.");
  const accepted = metrics.counter("wh_serve_events_accepted_total", "Events accepted (on disk, answered 200).");
  const duplicates = metrics.counter("wh_serve_events_duplicate_total", "Events dropped as duplicates of a recent messageId.");
  const ended = metrics.counter("wh_serve_events_total", "Events whose delivery ended, by outcome (delivered, skipped, failed, invalid).");
  const latency = metrics.histogram("wh_serve_delivery_latency_seconds", "Time from accepting an event to its delivery.", [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]);
  metrics.gauge("wh_serve_spool_depth", "Events accepted and not yet ended.", () => spool.depth);
  metrics.gauge("wh_serve_spool_bytes", "Bytes of the spool's files.", () => spool.bytes);

  let deliverer: Awaited<ReturnType<typeof createDeliverer>> | undefined;
  const forwarders: Forwarder[] = [];
  try {
    deliverer = await createDeliverer(options.settings, { env: options.env });
    for (const destination of options.settings.destinations) {
      const name = destination.source === undefined ? "dead-letters.ndjson" : `dead-letters.${destination.source.replace(/[^A-Za-z0-9._-]/g, "_")}.ndjson`;
      const deadLetter = AppendFile.open(join(options.dataDir, name), "the dead-letter file", "append");
      const queue = new JobQueue();
      const sender = deliverer.to(destination);
      const forwarder: Forwarder = { destination, sender, queue, recent: new RecentIds(options.dedupWindow), deadLetter, run: Promise.resolve(undefined as unknown as RunSummary) };
      forwarder.run = runDeliveries(queue, {
        sender,
        concurrency: options.concurrency,
        ordered: true,
        batchSize: destination.batchSize,
        ratePerSecond: undefined,
        journal: spool,
        deadLetter,
        signal: options.signal,
        onDeliveryEvent: options.onDeliveryEvent === undefined ? undefined : (job, event) => options.onDeliveryEvent?.(job, event, destination),
        onOutcome: (job, outcome, report, reason) => {
          if (outcome !== "interrupted" && outcome !== "dry-run") ended.inc({ outcome });
          const receivedAt = (job.origin as { receivedAt?: string } | undefined)?.receivedAt;
          if (outcome === "delivered" && receivedAt !== undefined) latency.observe((Date.now() - Date.parse(receivedAt)) / 1_000);
          options.onOutcome?.(job, outcome, report, reason, destination);
        },
      }).then((summary) => {
        if (summary.writeError !== undefined) options.onForwardingStopped?.(destination, summary.writeError);
        return summary;
      });
      forwarders.push(forwarder);
    }
  } catch (error) {
    for (const forwarder of forwarders) forwarder.queue.end();
    await Promise.allSettled(forwarders.map((forwarder) => forwarder.run));
    await deliverer?.close();
    spool.close();
    throw error;
  }
  const retryingNow = (): number => forwarders.reduce((sum, forwarder) => sum + forwarder.sender.retrying, 0);
  metrics.gauge("wh_serve_retrying", "Deliveries waiting to retry a URL.", retryingNow);

  const forwarderOf = (source: string | null | undefined): Forwarder | undefined =>
    options.bySource ? forwarders.find((forwarder) => forwarder.destination.source === source) : forwarders[0];

  const job = (seq: number, spooled: SpooledEvent, prepared: PrepareResult): DeliveryJob => {
    const messageId = spooled.event.messageId as string;
    return {
      number: seq,
      original: JSON.stringify(spooled.event),
      prepared,
      label: `event ${messageId}`,
      origin: { messageId, ...(spooled.source === null ? {} : { source: spooled.source }), receivedAt: spooled.event.receivedAt },
    };
  };

  // What an earlier run accepted and did not finish goes first, in the order it was accepted.
  for (const record of unfinished) recover(record);
  function recover(record: SpoolRecord): void {
    const spooled = JSON.parse(record.text) as SpooledEvent;
    const forwarder = forwarderOf(spooled.source) ?? (forwarders[0] as Forwarder);
    const prepared: PrepareResult =
      forwarderOf(spooled.source) === undefined
        ? { ok: false, kind: "invalid-message", error: `accepted for the source ${JSON.stringify(spooled.source)}, which the config no longer has` }
        : prepareMessage(spooled.event, stamps, { mode: forwarder.destination.mode });
    if (typeof spooled.event.messageId === "string") forwarder.recent.add(spooled.event.messageId);
    forwarder.queue.push([job(record.seq, spooled, prepared)]);
  }

  const report = (request: AcceptedRequest): TrackingAnswer => {
    requests.inc({ status: String(request.status) });
    options.onRequest?.(request);
    if (request.status === 200) return { status: 200, body: { success: true } };
    const retry = request.status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : undefined;
    return { status: request.status, body: { success: false, message: request.message }, ...(retry === undefined ? {} : { headers: retry }) };
  };

  const accept = async (request: TrackingRequest): Promise<TrackingAnswer> => {
    const base = { path: request.path, accepted: 0, duplicates: 0 };
    const expanded = expandRequest(request.call, request.body, { receivedAt: new Date(), ip: request.ip?.replace(/^::ffff:/, ""), stamps });
    const writeKey = request.authWriteKey ?? (expanded.ok ? expanded.writeKey : undefined);
    const forwarder = options.bySource ? forwarders.find((candidate) => candidate.destination.writeKey !== undefined && candidate.destination.writeKey === writeKey) : forwarders[0];
    if (forwarder === undefined) {
      return report({ ...base, status: 401, source: undefined, message: writeKey === undefined ? "no write key (send it as the basic-auth user, or writeKey in the body)" : "unknown write key" });
    }
    const source = forwarder.destination.source;
    if (!expanded.ok) return report({ ...base, status: 400, source, message: expanded.error });
    const fresh: { event: Record<string, unknown>; prepared: PrepareResult }[] = [];
    const ids = new Set<string>();
    for (const [index, event] of expanded.events.entries()) {
      const prepared = prepareMessage(event, stamps, { mode: forwarder.destination.mode });
      if (!prepared.ok) return report({ ...base, status: 400, source, message: `${request.call === "batch" ? `batch[${index}]: ` : ""}${prepared.error}` });
      const messageId = event.messageId as string;
      if (forwarder.recent.has(messageId) || ids.has(messageId)) continue;
      ids.add(messageId);
      fresh.push({ event, prepared });
    }
    const dropped = expanded.events.length - fresh.length;
    duplicates.inc({}, dropped);
    if (!forwarder.destination.enabled || fresh.length === 0) return report({ ...base, status: 200, source, duplicates: dropped });
    const records = fresh.map(({ event }) => JSON.stringify({ source: source ?? null, event } satisfies SpooledEvent));
    if (spool.full(records.reduce((sum, record) => sum + Buffer.byteLength(record) + 1, 0))) {
      return report({ ...base, status: 503, source, message: `the spool is full (${spool.bytes} bytes, --max-spool); retry later` });
    }
    let seqs: number[];
    try {
      seqs = await spool.append(records);
    } catch (error) {
      if (!(error instanceof OutputWriteError)) throw error;
      return report({ ...base, status: 503, source, message: `${error.message}; retry later` });
    }
    for (const id of ids) forwarder.recent.add(id);
    accepted.inc({}, fresh.length);
    forwarder.queue.push(fresh.map(({ event, prepared }, index) => job(seqs[index] as number, { source: source ?? null, event }, prepared)));
    const events = fresh.map(({ event }, index) => ({ seq: seqs[index] as number, event }));
    return report({ ...base, status: 200, source, accepted: fresh.length, duplicates: dropped, events, headers: maskHeaders(request.headers) });
  };

  let server: Awaited<ReturnType<typeof startTrackingServer>>;
  try {
    server = await startTrackingServer({
      host: options.host,
      port: options.port,
      maxBodyBytes: options.maxBodyBytes,
      accept,
      onRefused: (path, answer) => {
        requests.inc({ status: String(answer.status) });
        options.onRequest?.({ path, status: answer.status, source: undefined, accepted: 0, duplicates: 0, message: String(answer.body.message) });
      },
      health: () => ({ status: "ok", spool: { depth: spool.depth, bytes: spool.bytes }, retrying: retryingNow() }),
      metrics: () => metrics.render(),
    });
  } catch (error) {
    for (const forwarder of forwarders) forwarder.queue.end();
    await Promise.allSettled(forwarders.map((forwarder) => forwarder.run));
    await deliverer.close();
    spool.close();
    throw error;
  }

  const done = (async (): Promise<RunSummary[]> => {
    if (!options.signal.aborted) await new Promise((resolve) => options.signal.addEventListener("abort", resolve, { once: true }));
    await server.close();
    for (const forwarder of forwarders) forwarder.queue.end();
    try {
      return await Promise.all(forwarders.map((forwarder) => forwarder.run));
    } finally {
      await deliverer?.close();
      for (const forwarder of forwarders) forwarder.deadLetter.close();
      spool.close();
    }
  })();
  return {
    url: server.url,
    port: server.port,
    recovered: unfinished.length,
    dataDir: options.dataDir,
    deadLetterPaths: forwarders.map((forwarder) => forwarder.deadLetter.path),
    done,
  };
}
