import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { AppendFile } from "../adapters/append-file.js";
import { QueueUnavailable, RedisQueue } from "../adapters/redis-queue.js";
import { Spool } from "../adapters/spool.js";
import type { SpoolReader } from "../adapters/spool-reader.js";
import { startTrackingServer, type TrackingAnswer, type TrackingRequest } from "../adapters/tracking-server.js";
import type { Destination, DeliverySettings } from "../config/resolve.js";
import type { DeliveryEvent, DeliveryReport } from "../core/deliver.js";
import { OutputWriteError } from "../core/errors.js";
import { prepareMessage, type PrepareResult } from "../core/message/prepare.js";
import { isJsonObject, parseJson } from "../core/message/parse-json.js";
import { redactHeaders } from "../core/redact.js";
import { expandRequest, RecentIds } from "../core/message/tracking.js";
import { Registry } from "../core/prometheus.js";
import { shardOfKey } from "../core/shard.js";
import { untrusted, type Untrusted } from "../core/untrusted.js";
import { createDeliverer, type Sender } from "./deliverer.js";
import { JobQueue } from "./job-queue.js";
import { RedisForwardLogs } from "./redis-forwarding.js";
import { runDeliveries, type DeadLetterLog, type DeliveryJob, type FinishedLog, type JobOutcome, type RunSummary } from "./run-deliveries.js";

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
  /** Redis Streams instead of the local spool: `redis://…`, and the partitions of a new queue. */
  queue?: { url: string; partitions?: number | undefined } | undefined;
  /** accept: answer the tracking API only; forward: deliver only; both (the default). */
  role?: "accept" | "forward" | "both" | undefined;
  /** With Redis: dead letters also to this file (they always go to the dead-letter stream). */
  deadLetterPath?: string | undefined;
  /** A trouble that does not stop anything (Redis away for a moment): for the log. */
  onWarning?: (message: string) => void;
}

/** What became of one request to the tracking API. */
export interface AcceptedRequest {
  /** As the client sent it. */
  path: Untrusted;
  status: number;
  source: string | undefined;
  accepted: number;
  duplicates: number;
  /** Why it was refused, for statuses other than 200: it can quote what the client sent. */
  message?: Untrusted;
  /** The events accepted, as the pipeline enriched them. */
  events?: Record<string, unknown>[];
  /** The request's headers, credentials masked. */
  headers?: Record<string, string>;
}

export interface ServeHandle {
  url: string;
  port: number;
  /** Events accepted by an earlier run and not yet delivered, now being delivered. */
  recovered: number;
  dataDir: string;
  /** Resolves once `signal` has stopped the server and the forwarders have ended. */
  done: Promise<RunSummary[]>;
}

/** A source as accepting sees it: its destination and the messageIds it accepted lately. */
interface Source {
  destination: Destination;
  recent: RecentIds;
}

interface Forwarder {
  destination: Destination;
  sender: Sender;
  /** Where its jobs come from: pushed (Redis), or read from the spool. */
  queue: JobQueue | undefined;
  stopInput: () => void;
  /** The dead-letter file, to close at the end (with Redis, only when --dead-letter names one). */
  deadLetter: AppendFile | undefined;
  run: Promise<RunSummary>;
}

/** A spooled event: its source and the event as the pipeline enriched it. */
interface SpooledEvent {
  source: string | null;
  event: Record<string, unknown>;
}

/** A stored record (a spool line, a Redis entry) read back; why it cannot be delivered when it is not one. */
function readSpooled(text: string): SpooledEvent | string {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed.error;
  const record = parsed.value;
  if (!isJsonObject(record) || !isJsonObject(record.event) || !(record.source === null || typeof record.source === "string")) return "not a record of wh serve's spool";
  return { source: record.source, event: record.event };
}

/**
 * `wh serve`: Segment's tracking API in front of the delivery engine. An accepted request is on
 * disk (the spool) before it is answered 200; each source's forwarder delivers from there with the
 * shared runner (each user's events in order, retries for the window, dead letters) and marks
 * each event in the spool when it has ended. Events left in the spool by an earlier run (a crash,
 * kill -9) are delivered first.
 */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const accepting = options.role !== "forward";
  const forwarding = options.role !== "accept";
  const redis = options.queue === undefined ? undefined : await RedisQueue.connect(options.queue.url, { partitions: options.queue.partitions });
  const sources: Source[] = options.settings.destinations.map((destination) => ({ destination, recent: new RecentIds(options.dedupWindow) }));
  /** The source (or forwarder) of a stored event, by the source's name; the one there is with flat settings. */
  const named = <T extends { destination: Destination }>(list: readonly T[], name: string | null | undefined): T | undefined =>
    options.bySource ? list.find((item) => item.destination.source === name) : list[0];
  /** A record recovery finds: why it cannot be delivered; else its messageId joins its source's duplicate window. */
  const recoveredRecord = (text: string): string | undefined => {
    const read = readSpooled(text);
    if (typeof read === "string") return read;
    if (typeof read.event.messageId === "string") named(sources, read.source)?.recent.add(read.event.messageId);
    return undefined;
  };
  let opened: Awaited<ReturnType<typeof Spool.open>> | undefined;
  try {
    opened =
      redis === undefined
        ? await Spool.open(join(options.dataDir, "spool"), { maxBytes: options.maxSpoolBytes, check: recoveredRecord, quarantinePath: join(options.dataDir, "quarantine.ndjson") })
        : undefined;
  } catch (error) {
    await redis?.close();
    throw error;
  }
  const spool = opened?.spool;
  const quarantined = opened?.quarantined;
  if (quarantined !== undefined) {
    options.onWarning?.(`the spool held ${quarantined.count} unreadable record${quarantined.count === 1 ? "" : "s"}: moved to ${quarantined.path}; every other event is delivered`);
  }
  const redisLogs = redis === undefined ? undefined : new RedisForwardLogs(redis);
  const stamps = { now: () => new Date(), newId: randomUUID };
  const metrics = new Registry();
  const requests = metrics.counter("wh_serve_requests_total", "Requests to the tracking API, by HTTP status answered.");
  const accepted = metrics.counter("wh_serve_events_accepted_total", "Events accepted (stored, answered 200).");
  const duplicates = metrics.counter("wh_serve_events_duplicate_total", "Events dropped as duplicates of a recent messageId.");
  const ended = metrics.counter("wh_serve_events_total", "Events whose delivery ended, by outcome (delivered, skipped, failed, invalid).");
  const latency = metrics.histogram("wh_serve_delivery_latency_seconds", "Time from accepting an event to its delivery.", [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]);
  if (spool !== undefined) {
    metrics.gauge("wh_serve_spool_depth", "Events accepted and not yet ended.", () => spool.depth);
    metrics.gauge("wh_serve_spool_bytes", "Bytes of the spool's files.", () => spool.bytes);
  }
  let partitionStates: Awaited<ReturnType<RedisQueue["partitionStates"]>> = [];
  let queueUp = 1;
  if (redis !== undefined) {
    metrics.gauge("wh_serve_queue_up", "1 when Redis answered the last scrape, else 0.", () => queueUp);
    metrics.gaugeFamily("wh_serve_partition_lag", "Events waiting in each partition (not yet delivered or dead-lettered).", () =>
      partitionStates.map((state) => ({ labels: { partition: String(state.partition) }, value: state.waiting })),
    );
    metrics.gaugeFamily("wh_serve_partition_owner", "The forwarder holding each partition's lease (1 per partition with an owner).", () =>
      partitionStates.filter((state) => state.owner !== null).map((state) => ({ labels: { partition: String(state.partition), owner: state.owner as string }, value: 1 })),
    );
    metrics.gauge("wh_serve_partitions_owned", "Partitions this process forwards.", () => redis.ownedPartitions.length);
  }

  let deliverer: Awaited<ReturnType<typeof createDeliverer>> | undefined;
  const forwarders: Forwarder[] = [];
  const stopForwarding = async (): Promise<RunSummary[]> => {
    for (const forwarder of forwarders) forwarder.stopInput();
    try {
      return await Promise.all(forwarders.map((forwarder) => forwarder.run));
    } finally {
      await redis?.close();
      await deliverer?.close();
      for (const forwarder of forwarders) forwarder.deadLetter?.close();
      spool?.close();
    }
  };
  try {
    if (forwarding) {
      deliverer = await createDeliverer(options.settings, { env: options.env });
      for (const destination of options.settings.destinations) forwarders.push(startForwarder(destination, deliverer));
    }
  } catch (error) {
    await stopForwarding().catch(() => undefined);
    throw error;
  }

  function startForwarder(destination: Destination, using: NonNullable<typeof deliverer>): Forwarder {
    const name = destination.source === undefined ? "dead-letters.ndjson" : `dead-letters.${destination.source.replace(/[^A-Za-z0-9._-]/g, "_")}.ndjson`;
    // With Redis the dead letters go to its dead-letter stream (and --dead-letter's file too, when
    // given); with the spool, to a file in the data directory.
    const path = redisLogs === undefined ? join(options.dataDir, name) : options.deadLetterPath;
    const file = path === undefined ? undefined : AppendFile.open(path, "the dead-letter file", "append");
    const deadLetter: DeadLetterLog | undefined = redisLogs === undefined || file === undefined ? (redisLogs?.deadLetters ?? file) : both(redisLogs.deadLetters, file);
    const journal: FinishedLog = redisLogs?.journal ?? (spool as Spool);
    const sender = using.to(destination);
    const queue = spool === undefined ? new JobQueue() : undefined;
    const reader = spool?.reader();
    const stopInput = (): void => (queue === undefined ? reader?.stop() : queue.end());
    const self = { destination, sender, queue, stopInput } as Forwarder;
    const input = queue ?? spooledJobs(reader as SpoolReader, self);
    const run = runDeliveries(input, {
      stopInput,
      sender,
      concurrency: options.concurrency,
      ordered: true,
      batchSize: destination.batchSize,
      ratePerSecond: undefined,
      journal,
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
    return Object.assign(self, { deadLetter: file, run });
  }

  /** The forwarder's jobs, read from the spool a window at a time: the events of its source (the first also takes those of sources gone from the config). */
  async function* spooledJobs(reader: SpoolReader, forwarder: Forwarder): AsyncIterable<DeliveryJob[]> {
    for await (const records of reader) {
      const jobs: DeliveryJob[] = [];
      for (const record of records) {
        const held = record.attached as { spooled: SpooledEvent; prepared: PrepareResult } | undefined;
        const spooled = held?.spooled ?? readSpooled(record.text);
        if (typeof spooled === "string") {
          jobs.push({ number: record.seq, original: record.text, prepared: { ok: false, kind: "invalid-message", error: `the spool's record cannot be read: ${spooled}` }, label: `record ${record.seq}` });
          continue;
        }
        const made = jobOf(record.seq, spooled, held?.prepared);
        if (made.forwarder === forwarder) jobs.push(made.job);
      }
      if (jobs.length > 0) yield jobs;
    }
  }

  const retryingNow = (): number => forwarders.reduce((sum, forwarder) => sum + forwarder.sender.retrying, 0);
  metrics.gauge("wh_serve_retrying", "Deliveries waiting to retry a URL.", retryingNow);

  /** A delivery job for a stored event (a spool record, or a Redis entry); `prepared` when accepting prepared it already. */
  const jobOf = (number: number, spooled: SpooledEvent, preparedAlready?: PrepareResult): { forwarder: Forwarder; job: DeliveryJob } => {
    const own = named(forwarders, spooled.source);
    const forwarder = own ?? (forwarders[0] as Forwarder);
    const prepared: PrepareResult =
      own === undefined
        ? { ok: false, kind: "invalid-message", error: `accepted for the source ${JSON.stringify(spooled.source)}, which the config no longer has` }
        : (preparedAlready ?? prepareMessage(spooled.event, stamps, { mode: forwarder.destination.mode }));
    const messageId = spooled.event.messageId as string;
    return {
      forwarder,
      job: {
        number,
        original: JSON.stringify(spooled.event),
        prepared,
        // The client chose the messageId: the label is printed, so it is neutralised.
        label: `event ${untrusted(messageId)}`,
        origin: { messageId, ...(spooled.source === null ? {} : { source: spooled.source }), receivedAt: spooled.event.receivedAt },
      },
    };
  };
  const pushAll = (jobs: { forwarder: Forwarder; job: DeliveryJob }[]): void => {
    const byForwarder = new Map<Forwarder, DeliveryJob[]>();
    for (const { forwarder, job } of jobs) {
      const batch = byForwarder.get(forwarder);
      if (batch === undefined) byForwarder.set(forwarder, [job]);
      else batch.push(job);
    }
    for (const [forwarder, batch] of byForwarder) forwarder.queue?.push(batch);
  };

  if (redis !== undefined && redisLogs !== undefined && forwarders.length > 0) {
    redis.startForwarding({
      deliver: (entries) => {
        const readable = entries.filter((entry) => {
          const read = readSpooled(entry.text);
          if (typeof read === "string") redis.deadLetterUnreadable(entry, `not an event of wh serve: ${read}`);
          return typeof read !== "string";
        });
        pushAll(readable.map((entry) => jobOf(redisLogs.track(entry), readSpooled(entry.text) as SpooledEvent)));
      },
      outstanding: () => redisLogs.outstanding,
      onError: (error) => options.onWarning?.(`Redis: ${error.message}; forwarding waits and goes on when it answers`),
    });
  }

  const report = ({ path, message, ...request }: Omit<AcceptedRequest, "path" | "message"> & { path: string; message?: string }): TrackingAnswer => {
    requests.inc({ status: String(request.status) });
    options.onRequest?.({ ...request, path: untrusted(path), ...(message === undefined ? {} : { message: untrusted(message) }) });
    if (request.status === 200) return { status: 200, body: { success: true } };
    const retry = request.status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : undefined;
    return { status: request.status, body: { success: false, message }, ...(retry === undefined ? {} : { headers: retry }) };
  };

  /**
   * Stores accepted events durably: in the spool (whose readers feed the forwarders), or in Redis. A message when they could not be stored (answered 503).
   */
  const store = async (source: Source, fresh: { event: Record<string, unknown>; prepared: PrepareResult }[]): Promise<string | undefined> => {
    const name = source.destination.source ?? null;
    const records = fresh.map(({ event }) => JSON.stringify({ source: name, event } satisfies SpooledEvent));
    if (redis !== undefined) {
      const entries = fresh.map(({ prepared, event }, index) => {
        const key = (prepared.ok ? prepared.message.userKey : undefined) ?? String(event.messageId);
        return { partition: shardOfKey(key, redis.partitions), text: records[index] as string };
      });
      try {
        await redis.append(entries);
      } catch (error) {
        if (error instanceof QueueUnavailable) return `${error.message}; retry later`;
        throw error;
      }
      return undefined;
    }
    const local = spool as Spool;
    if (local.full(records.reduce((sum, record) => sum + Buffer.byteLength(record) + 1, 0))) return `the spool is full (${local.bytes} bytes, --max-spool); retry later`;
    try {
      // Forwarders that wait at the spool's end are handed the events as they are, prepared already.
      await local.append(
        records,
        fresh.map(({ event, prepared }) => ({ spooled: { source: name, event }, prepared })),
      );
    } catch (error) {
      if (!(error instanceof OutputWriteError)) throw error;
      return `${error.message}; retry later`;
    }
    return undefined;
  };

  const accept = async (request: TrackingRequest): Promise<TrackingAnswer> => {
    const base = { path: request.path, accepted: 0, duplicates: 0 };
    if (!accepting) return report({ ...base, status: 404, source: undefined, message: "this wh serve only forwards (--role forward): send to one that accepts" });
    const expanded = expandRequest(request.call, request.body, { receivedAt: new Date(), ip: request.ip?.replace(/^::ffff:/, ""), stamps });
    const writeKey = request.authWriteKey ?? (expanded.ok ? expanded.writeKey : undefined);
    const source = options.bySource ? sources.find((candidate) => candidate.destination.writeKey !== undefined && candidate.destination.writeKey === writeKey) : sources[0];
    if (source === undefined) {
      return report({ ...base, status: 401, source: undefined, message: writeKey === undefined ? "no write key (send it as the basic-auth user, or writeKey in the body)" : "unknown write key" });
    }
    const name = source.destination.source;
    if (!expanded.ok) return report({ ...base, status: 400, source: name, message: expanded.error });
    const fresh: { event: Record<string, unknown>; prepared: PrepareResult }[] = [];
    const ids = new Set<string>();
    for (const [index, event] of expanded.events.entries()) {
      const prepared = prepareMessage(event, stamps, { mode: source.destination.mode });
      if (!prepared.ok) return report({ ...base, status: 400, source: name, message: `${request.call === "batch" ? `batch[${index}]: ` : ""}${prepared.error}` });
      const messageId = event.messageId as string;
      if (source.recent.has(messageId) || ids.has(messageId)) continue;
      ids.add(messageId);
      fresh.push({ event, prepared });
    }
    const dropped = expanded.events.length - fresh.length;
    duplicates.inc({}, dropped);
    if (!source.destination.enabled || fresh.length === 0) return report({ ...base, status: 200, source: name, duplicates: dropped });
    const refusal = await store(source, fresh);
    if (refusal !== undefined) return report({ ...base, status: 503, source: name, message: refusal });
    for (const id of ids) source.recent.add(id);
    accepted.inc({}, fresh.length);
    const events = fresh.map(({ event }) => event);
    return report({ ...base, status: 200, source: name, accepted: fresh.length, duplicates: dropped, events, headers: redactHeaders(request.headers) });
  };

  const health = (): Record<string, unknown> => ({
    status: "ok",
    role: options.role ?? "both",
    ...(spool === undefined ? {} : { spool: { depth: spool.depth, bytes: spool.bytes, ...(quarantined === undefined ? {} : { quarantined }) } }),
    ...(redis === undefined ? {} : { queue: { url: redis.url, partitions: redis.partitions, owned: redis.ownedPartitions, consumer: redis.consumer } }),
    retrying: retryingNow(),
  });

  let server: Awaited<ReturnType<typeof startTrackingServer>>;
  try {
    server = await startTrackingServer({
      host: options.host,
      port: options.port,
      maxBodyBytes: options.maxBodyBytes,
      accept,
      onRefused: (path, answer) => {
        requests.inc({ status: String(answer.status) });
        options.onRequest?.({ path: untrusted(path), status: answer.status, source: undefined, accepted: 0, duplicates: 0, message: untrusted(String(answer.body.message)) });
      },
      health,
      metrics: async () => {
        if (redis !== undefined) {
          try {
            partitionStates = await redis.partitionStates();
            queueUp = 1;
          } catch {
            queueUp = 0;
          }
        }
        return metrics.render();
      },
    });
  } catch (error) {
    await stopForwarding().catch(() => undefined);
    throw error;
  }

  const done = (async (): Promise<RunSummary[]> => {
    if (!options.signal.aborted) await new Promise((resolve) => options.signal.addEventListener("abort", resolve, { once: true }));
    await server.close();
    return stopForwarding();
  })();
  return {
    url: server.url,
    port: server.port,
    recovered: opened?.recovered ?? 0,
    dataDir: options.dataDir,
    done,
  };
}

/** Dead letters to the Redis stream and to a file: the file's count says what was written whole. */
function both(stream: DeadLetterLog, file: AppendFile): DeadLetterLog {
  return {
    append(record) {
      stream.append(record);
      file.append(record);
    },
    flush() {
      stream.flush();
      file.flush();
    },
    get count() {
      return file.count;
    },
  };
}
