import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { UsageError } from "../../core/errors.js";
import { redactUrlText } from "../../core/redact.js";
import { Commits } from "./commits.js";
import { byGroup, connectRedis, QueueKeys, type Redis, type RedisClient, redisFor, waitForReplicas } from "./connection.js";
import { listDeadLetters, replayDeadLetters, type RedisDeadLetter } from "./dead-letters.js";
import { PartitionLeases } from "./leases.js";
import { PartitionReader, type ForwardingHandlers, type QueuedEntry } from "./reader.js";
import { leaseOwner } from "./tenure.js";
import { settlesWithin } from "../settles-within.js";

/** Redis is unreachable or refused a write: accepting answers 503, forwarding waits. */
export class QueueUnavailable extends Error {}

const DEFAULT_PARTITIONS = 64;

/**
 * Records the partition count and the key layout of a new queue (KEYS[1], its meta), and answers
 * those of the queue: an existing queue keeps both, and one without a layout is of an earlier wh.
 */
const SETUP = `if redis.call("exists", KEYS[1]) == 0 then redis.call("hset", KEYS[1], "partitions", ARGV[1], "keys", "slots") end
return redis.call("hmget", KEYS[1], "partitions", "keys")`;

/** Acknowledgement after replication (--queue-wait-replicas): accepting answers 503 unless this many replicas have the events within `timeoutMs`. */
export interface ReplicaWait {
  replicas: number;
  timeoutMs: number;
}

export interface QueueOptions {
  partitions?: number | undefined;
  prefix?: string;
  wait?: ReplicaWait | undefined;
}

/**
 * `wh serve --queue redis://…`: accepted events in Redis Streams, one stream per partition (a
 * stable hash of the user key), read by consumer groups. Each partition has at most one
 * forwarder at a time, by a lease its owner renews; forwarders share the partitions evenly as
 * they join and leave (each takes at most ceil(partitions / live forwarders)), and a partition is
 * given up only once every event read from it has ended. An event is acknowledged (XACK, then
 * removed) only when its delivery ended: delivered, skipped, or written to the dead-letter
 * stream, in the same transaction. Everything goes through node-redis.
 *
 * Redis can go away or freeze with leases held. The owner's own clock decides: a partition whose
 * renewal has not come back in time is dropped before Redis can give it to another forwarder
 * (the deliveries of its events are cut through their entries' `lease` signal and they stay
 * pending), and a new owner of a partition not given up cleanly waits TAKEOVER_WAIT_MS before it
 * claims and delivers them, so one partition is never delivered by two forwarders at once and
 * each user's order holds. Every SWEEP_MS an owner claims and reads its partitions' pending
 * events again, so none stays pending.
 *
 * The parts: PartitionLeases (ownership), PartitionReader (reading and claiming), Commits (acks
 * and dead letters written together), redis-dead-letters.ts (listing and replaying them).
 */
export class RedisQueue {
  readonly consumer = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly leases: PartitionLeases;
  private readonly commits: Commits;
  private reader: { client: RedisClient; reading: PartitionReader } | undefined;
  private stopped = false;
  /** Set when a stop gave up waiting on Redis and closed the connections itself. */
  private clientsDestroyed = false;
  private handlers: ForwardingHandlers | undefined;

  private readonly client: RedisClient;

  private constructor(
    private readonly redis: Redis,
    /** Accepting's own connection: a WAIT holds it until the replicas answer, and nothing else waits behind it. */
    private readonly accepting: Redis,
    private readonly connectUrl: string,
    readonly url: string,
    readonly partitions: number,
    private readonly keys: QueueKeys,
    private readonly wait: ReplicaWait | undefined,
  ) {
    this.client = redis.client;
    this.leases = new PartitionLeases(this.client, keys, this.consumer, partitions);
    this.commits = new Commits(
      this.client,
      keys,
      this.leases,
      (error) => this.handlers?.onError?.(error),
      () => this.stopped,
    );
  }

  /**
   * Connects (to a cluster when the server is a node of one), and reads (or records, for a new
   * queue) the partition count: fixed for the life of a queue. A `partitions` that differs from
   * the recorded one is a usage error.
   */
  static async connect(url: string, options: QueueOptions): Promise<RedisQueue> {
    const shown = redactUrlText(url);
    let redis: Redis;
    try {
      redis = await connectRedis(url);
    } catch (error) {
      throw new UsageError(`--queue ${shown}: cannot connect to Redis: ${(error as Error).message}`, { cause: error });
    }
    const refuse = async (error: UsageError): Promise<never> => {
      await redis.client.destroy();
      throw error;
    };
    if (redis.cluster && !/^\/?0?$/.test(new URL(url).pathname))
      await refuse(new UsageError(`--queue ${shown}: a Redis Cluster has database 0 only`, { hint: "leave the /database out of the URL" }));
    const prefix = options.prefix ?? "wh:serve";
    let recorded: number;
    let slots: boolean;
    try {
      const meta = new QueueKeys(prefix, true, redis.cluster).meta;
      const [partitions, layout] = (await redis.client.eval(SETUP, { keys: [meta], arguments: [String(options.partitions ?? DEFAULT_PARTITIONS)] })) as [
        string,
        string | null,
      ];
      recorded = Number(partitions);
      slots = layout === "slots";
    } catch (error) {
      // A password Redis refused, a database that does not exist, a replica that does not take writes.
      return refuse(new UsageError(`--queue ${shown}: Redis refused the queue's setup: ${(error as Error).message}`, { cause: error }));
    }
    if (options.partitions !== undefined && options.partitions !== recorded)
      await refuse(
        new UsageError(`--partitions ${options.partitions}: the queue at ${shown} has ${recorded} partitions, fixed when it was created`, {
          hint: `leave --partitions out, or give --partitions ${recorded}`,
        }),
      );
    if (redis.cluster && !slots)
      await refuse(new UsageError(`--queue ${shown}: the queue was made by an earlier wh, whose key names a Redis Cluster cannot hold`));
    const accepting = redisFor(url, redis.cluster);
    try {
      await accepting.client.connect();
    } catch (error) {
      return refuse(new UsageError(`--queue ${shown}: cannot connect to Redis: ${(error as Error).message}`, { cause: error }));
    }
    return new RedisQueue(redis, accepting, url, shown, recorded, new QueueKeys(prefix, slots, redis.cluster), options.wait);
  }

  /**
   * Adds records to their partitions' streams, in one transaction per transaction group (all of
   * them on one server, each partition's on a cluster), then waits for the replicas if asked;
   * resolves once Redis has them all. A request refused after some groups were written has those
   * stored: its retry adds them again (duplicates, never a loss).
   */
  async append(entries: { partition: number; text: string }[]): Promise<void> {
    const client = this.accepting.client;
    const wait = this.wait;
    let confirmed = true;
    try {
      await Promise.all(
        byGroup(this.keys, entries, (entry) => entry.partition).map(async (group) => {
          const multi = client.multi();
          for (const entry of group) multi.xAdd(this.keys.stream(entry.partition), "*", { r: entry.text });
          await multi.exec();
          if (wait === undefined) return;
          const key = this.keys.stream((group[0] as { partition: number }).partition);
          if ((await waitForReplicas(this.accepting, key, wait.replicas, wait.timeoutMs)) < wait.replicas) confirmed = false;
        }),
      );
    } catch (error) {
      throw new QueueUnavailable(`Redis did not take the events: ${(error as Error).message}`, { cause: error });
    }
    if (!confirmed) throw new QueueUnavailable(`Redis took the events but ${wait?.replicas} replica(s) did not confirm them within ${wait?.timeoutMs} ms`);
  }

  /** Starts taking partitions and reading them; `deliver` gets what to send, in order per partition. */
  startForwarding(handlers: ForwardingHandlers): void {
    this.handlers = handlers;
    // Redis answered the queue's opening: the reader's connection waits out Redis away now (a
    // restart, a failover) as any later outage, where a first connection that failed gave up for good.
    const { client } = redisFor(this.connectUrl, this.redis.cluster, true);
    this.leases.start((error) => handlers.onError?.(error));
    const reading = new PartitionReader(client, this.keys, this.consumer, this.leases, handlers, (entry, reason) => this.deadLetterUnreadable(entry, reason));
    this.reader = { client, reading };
  }

  /** Marks an event as ended (see the class comment); written at the next commit. */
  ended(partition: number, id: string): void {
    this.commits.ended(partition, id);
  }

  /**
   * An event whose delivery was cut or never started: it stays pending. Its partition is given
   * up (unless that happened already), so that none of the user's later events overtakes it; the
   * partition's next owner, perhaps this process again, delivers it.
   */
  unfinished(entry: QueuedEntry): void {
    const tenure = this.leases.of(entry.partition);
    if (tenure?.lease.signal === entry.lease) void this.leases.drop(entry.partition, tenure);
  }

  /** A dead letter, written to the dead-letter stream before the acks of the same commit. */
  deadLetter(record: string, entry: QueuedEntry): void {
    this.commits.deadLetter(entry.partition, { record, entry: entry.text, partition: String(entry.partition) });
  }

  /**
   * An entry that is not an event wh can deliver (another program's fields, a record that does not
   * parse): dead-lettered on its own with its raw text, and acknowledged in the same transaction,
   * so that the events read with it go on.
   */
  deadLetterUnreadable(entry: QueuedEntry, reason: string): void {
    const record = JSON.stringify({ at: new Date().toISOString(), outcome: "unreadable", reason });
    this.deadLetter(record, entry);
    this.ended(entry.partition, entry.id);
    void this.commit();
  }

  /** Writes dead letters and acks (one transaction); kept and tried again while Redis is away. */
  commit(): Promise<void> {
    return this.commits.commit();
  }

  /** The partitions this process forwards now. */
  get ownedPartitions(): number[] {
    return this.leases.partitionNumbers;
  }

  /** Per partition: events not yet delivered (the group's lag plus those read and not acknowledged) and the lease owner. */
  async partitionStates(): Promise<{ partition: number; waiting: number; owner: string | null }[]> {
    // Sent together (node-redis pipelines the commands of one tick), each to its partition's master.
    return Promise.all(
      Array.from({ length: this.partitions }, async (_, partition) => {
        const [waiting, owner] = await Promise.all([this.client.xLen(this.keys.stream(partition)), this.client.get(this.keys.lease(partition))]);
        return { partition, waiting: Number(waiting), owner: owner === null ? null : leaseOwner(owner) };
      }),
    );
  }

  /** The dead letters, oldest first, read a page at a time; fields another program wrote come back as empty text. */
  listDeadLetters(): AsyncGenerator<RedisDeadLetter> {
    return listDeadLetters(this.client, this.keys.deadLetterStreams(this.partitions));
  }

  /** Puts dead letters back into their partitions (and off the dead-letter stream), a page at a time, each page in one transaction. */
  replayDeadLetters(ids?: readonly string[], entryOf?: (letter: RedisDeadLetter) => string): Promise<number> {
    return replayDeadLetters(this.client, this.keys, this.partitions, ids, entryOf);
  }

  /**
   * Stops reading; the leases are given back (what was read and not ended is claimed by the next
   * owner). A Redis that does not answer (a frozen master) is waited for STOP_WAIT_MS, no longer:
   * then the connections are closed, the leases lapse on their own, and what was read and not
   * acknowledged is delivered again by the next forwarder, as after a kill -9. A stop used to wait
   * for as long as the master stayed frozen.
   */
  async stopForwarding(): Promise<void> {
    this.stopped = true;
    const handedBack = this.handBack();
    if (await settlesWithin(handedBack, STOP_WAIT_MS)) return;
    this.handlers?.onWarning?.(
      `Redis did not answer for ${STOP_WAIT_MS / 1_000} s as forwarding stopped: its connections were closed; the partitions' leases lapse on their own, and what was read and not acknowledged is delivered again by the next forwarder`,
    );
    this.clientsDestroyed = true;
    await Promise.all([destroyQuietly(this.reader?.client), destroyQuietly(this.client)]);
    await settlesWithin(handedBack, STOP_WAIT_MS);
  }

  /** The last commit, and the leases given back: the graceful half of stopForwarding. */
  private async handBack(): Promise<void> {
    await this.leases.stop();
    await this.reader?.reading.stop();
    await this.commits.running;
    await this.commit().catch(() => undefined);
    await this.leases.releaseAll();
    await this.reader?.client.destroy();
  }

  async close(): Promise<void> {
    if (this.handlers !== undefined && !this.stopped) await this.stopForwarding();
    await Promise.all([this.clientsDestroyed ? undefined : this.client.destroy(), this.accepting.client.destroy()]);
  }
}

/** How long stopping the forwarding waits on Redis (the last commit, the leases given back). */
const STOP_WAIT_MS = 5_000;

/** Closes a connection at once, its pending commands failed; one closed already is left alone. */
async function destroyQuietly(client: RedisClient | undefined): Promise<void> {
  try {
    await client?.destroy();
  } catch {
    // closed already
  }
}
