import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { UsageError } from "../core/errors.js";
import { redactUrlText } from "../core/redact.js";
import { Commits } from "./redis-commits.js";
import { newClient, QueueKeys, type RedisClient } from "./redis-connection.js";
import { listDeadLetters, replayDeadLetters, type RedisDeadLetter } from "./redis-dead-letters.js";
import { PartitionLeases } from "./redis-leases.js";
import { PartitionReader, type ForwardingHandlers, type QueuedEntry } from "./redis-reader.js";

/** Redis is unreachable or refused a write: accepting answers 503, forwarding waits. */
export class QueueUnavailable extends Error {}

const DEFAULT_PARTITIONS = 64;

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
  private handlers: ForwardingHandlers | undefined;

  private constructor(
    private readonly client: RedisClient,
    private readonly connectUrl: string,
    readonly url: string,
    readonly partitions: number,
    private readonly keys: QueueKeys,
  ) {
    this.leases = new PartitionLeases(client, keys, this.consumer, partitions);
    this.commits = new Commits(
      client,
      keys,
      this.leases,
      (error) => this.handlers?.onError?.(error),
      () => this.stopped,
    );
  }

  /**
   * Connects, and reads (or records, for a new queue) the partition count: fixed for the life
   * of a queue. A `partitions` that differs from the recorded one is a usage error.
   */
  static async connect(url: string, options: { partitions?: number | undefined; prefix?: string }): Promise<RedisQueue> {
    const shown = redactUrlText(url);
    const client = newClient(url);
    try {
      await client.connect();
    } catch (error) {
      await client.destroy();
      throw new UsageError(`--queue ${shown}: cannot connect to Redis: ${(error as Error).message}`, { cause: error });
    }
    const keys = new QueueKeys(options.prefix ?? "wh:serve");
    let recorded: number;
    try {
      await client.hSetNX(keys.meta, "partitions", String(options.partitions ?? DEFAULT_PARTITIONS));
      recorded = Number(await client.hGet(keys.meta, "partitions"));
    } catch (error) {
      await client.destroy();
      // A password Redis refused, a database that does not exist, a replica that does not take writes.
      throw new UsageError(`--queue ${shown}: Redis refused the queue's setup: ${(error as Error).message}`, { cause: error });
    }
    if (options.partitions !== undefined && options.partitions !== recorded) {
      await client.destroy();
      throw new UsageError(`--partitions ${options.partitions}: the queue at ${shown} has ${recorded} partitions, fixed when it was created`, {
        hint: `leave --partitions out, or give --partitions ${recorded}`,
      });
    }
    return new RedisQueue(client, url, shown, recorded, keys);
  }

  /** Adds records to their partitions' streams in one transaction; resolves once Redis has them all. */
  async append(entries: { partition: number; text: string }[]): Promise<void> {
    try {
      const multi = this.client.multi();
      for (const entry of entries) multi.xAdd(this.keys.stream(entry.partition), "*", { r: entry.text });
      await multi.exec();
    } catch (error) {
      throw new QueueUnavailable(`Redis did not take the events: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Starts taking partitions and reading them; `deliver` gets what to send, in order per partition. */
  startForwarding(handlers: ForwardingHandlers): void {
    this.handlers = handlers;
    const client = newClient(this.connectUrl);
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
    this.commits.deadLetter({ record, entry: entry.text, partition: String(entry.partition) });
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
    const multi = this.client.multi();
    for (let partition = 0; partition < this.partitions; partition += 1) {
      multi.xLen(this.keys.stream(partition));
      multi.get(this.keys.lease(partition));
    }
    const replies = (await multi.exec()) as unknown[];
    return Array.from({ length: this.partitions }, (_, partition) => ({
      partition,
      waiting: Number(replies[partition * 2]),
      owner: (replies[partition * 2 + 1] as string | null) ?? null,
    }));
  }

  /** The dead-letter stream, oldest first, read a page at a time; fields another program wrote come back as empty text. */
  listDeadLetters(): AsyncGenerator<RedisDeadLetter> {
    return listDeadLetters(this.client, this.keys);
  }

  /** Puts dead letters back into their partitions (and off the dead-letter stream), a page at a time, each page in one transaction. */
  replayDeadLetters(ids?: readonly string[], entryOf?: (letter: RedisDeadLetter) => string): Promise<number> {
    return replayDeadLetters(this.client, this.keys, this.partitions, ids, entryOf);
  }

  /** Stops reading; the leases are given back (what was read and not ended is claimed by the next owner). */
  async stopForwarding(): Promise<void> {
    this.stopped = true;
    await this.leases.stop();
    await this.reader?.reading.stop();
    await this.commits.running;
    await this.commit().catch(() => undefined);
    await this.leases.releaseAll();
    await this.reader?.client.destroy();
  }

  async close(): Promise<void> {
    if (this.handlers !== undefined && !this.stopped) await this.stopForwarding();
    await this.client.destroy();
  }
}
