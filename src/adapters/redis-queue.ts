import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { createClient } from "redis";
import { UsageError } from "../core/errors.js";
import { redactUrlText } from "../core/redact.js";

/** A client that fails a command at once while disconnected (accepting must answer 503, not wait) and reconnects by itself. */
function newClient(url: string) {
  let connected = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 5_000,
      // Once connected, keep trying (Redis restarts); a first connection that fails is an answer.
      reconnectStrategy: (retries, cause) => (connected ? Math.min(100 * 2 ** retries, 2_000) : retries < 2 ? 200 : cause),
    },
  });
  client.on("ready", () => {
    connected = true;
  });
  // Errors also reach the commands that were waiting: nothing more to do with them here.
  client.on("error", () => undefined);
  return client;
}
type Client = ReturnType<typeof newClient>;

/** Redis is unreachable or refused a write: accepting answers 503, forwarding waits. */
export class QueueUnavailable extends Error {}

export const DEFAULT_PARTITIONS = 64;
/** How long a partition's lease lasts without renewal; renewed three times within it. */
const LEASE_MS = 6_000;
const TICK_MS = 1_000;
const GROUP = "forwarders";

const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/** An event read from a partition: its stream entry id and the record text (source and event). */
export interface QueuedEntry {
  partition: number;
  id: string;
  text: string;
}

export interface ForwardingHandlers {
  /** Entries to deliver, in stream order per partition: a taken-over partition's pending ones first. */
  deliver(entries: QueuedEntry[]): void;
  /** How many delivered-but-not-ended entries the process holds: reading waits above the limit. */
  outstanding(): number;
  onError?(error: Error): void;
}

/**
 * `wh serve --queue redis://…`: accepted events in Redis Streams, one stream per partition (a
 * stable hash of the user key), read by consumer groups. Each partition has at most one
 * forwarder at a time, by a lease its owner renews; forwarders share the partitions evenly as
 * they join and leave (each takes at most ceil(partitions / live forwarders)), and a partition is
 * given up only once every event read from it has ended. An event is acknowledged (XACK, then
 * removed) only when its delivery ended: delivered, skipped, or written to the dead-letter
 * stream, in the same transaction. Everything goes through node-redis.
 */
export class RedisQueue {
  readonly consumer = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  /**
   * Per owned partition: giving it up; the ids of the events read and not yet acknowledged; and, while
   * its pending events are read again (after taking it, or after a read whose answer was lost),
   * the last id read of them.
   */
  private readonly owned = new Map<number, { draining: boolean; held: Set<string>; history: string | undefined }>();
  private readonly pendingAcks = new Map<number, string[]>();
  private pendingDead: Record<string, string>[] = [];
  private committing: Promise<void> | undefined;
  private reader: Client | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private stopped = false;
  private reading: Promise<void> | undefined;
  private handlers: ForwardingHandlers | undefined;

  private constructor(
    private readonly client: Client,
    private readonly connectUrl: string,
    readonly url: string,
    readonly partitions: number,
    private readonly prefix: string,
  ) {}

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
    const prefix = options.prefix ?? "wh:serve";
    const meta = `${prefix}:meta`;
    let recorded: number;
    try {
      await client.hSetNX(meta, "partitions", String(options.partitions ?? DEFAULT_PARTITIONS));
      recorded = Number(await client.hGet(meta, "partitions"));
    } catch (error) {
      await client.destroy();
      // A password Redis refused, a database that does not exist, a replica that does not take writes.
      throw new UsageError(`--queue ${shown}: Redis refused the queue's setup: ${(error as Error).message}`, { cause: error });
    }
    if (options.partitions !== undefined && options.partitions !== recorded) {
      await client.destroy();
      throw new UsageError(`--partitions ${options.partitions}: the queue at ${shown} has ${recorded} partitions, fixed when it was created`, { hint: `leave --partitions out, or give --partitions ${recorded}` });
    }
    return new RedisQueue(client, url, shown, recorded, prefix);
  }

  streamOf(partition: number): string {
    return `${this.prefix}:p:${partition}`;
  }

  private leaseOf(partition: number): string {
    return `${this.prefix}:lease:${partition}`;
  }

  private get deadLetterStream(): string {
    return `${this.prefix}:dead-letters`;
  }

  /** Adds records to their partitions' streams in one transaction; resolves once Redis has them all. */
  async append(entries: { partition: number; text: string }[]): Promise<void> {
    try {
      const multi = this.client.multi();
      for (const entry of entries) multi.xAdd(this.streamOf(entry.partition), "*", { r: entry.text });
      await multi.exec();
    } catch (error) {
      throw new QueueUnavailable(`Redis did not take the events: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Starts taking partitions and reading them; `deliver` gets what to send, in order per partition. */
  startForwarding(handlers: ForwardingHandlers): void {
    this.handlers = handlers;
    this.reader = newClient(this.connectUrl);
    void this.tick();
    this.ticker = setInterval(() => void this.tick(), TICK_MS);
    this.reading = this.readLoop();
  }

  /** Marks an event as ended (see the class comment); written at the next commit. */
  ended(partition: number, id: string): void {
    const ids = this.pendingAcks.get(partition) ?? [];
    ids.push(id);
    this.pendingAcks.set(partition, ids);
  }

  /** A dead letter, written to the dead-letter stream before the acks of the same commit. */
  deadLetter(record: string, entry: QueuedEntry): void {
    this.pendingDead.push({ record, entry: entry.text, partition: String(entry.partition) });
  }

  /**
   * An entry that is not an event wh can deliver (another program's fields, a record that does not
   * parse): dead-lettered on its own with its raw text, and acknowledged in the same transaction,
   * so that the events read with it go on.
   */
  deadLetterUnreadable(entry: QueuedEntry, reason: string): void {
    const record = JSON.stringify({ at: new Date().toISOString(), outcome: "unreadable", reason });
    this.pendingDead.push({ record, entry: entry.text, partition: String(entry.partition) });
    this.ended(entry.partition, entry.id);
    void this.commit();
  }

  /** Writes dead letters and acks (one transaction); kept and tried again while Redis is away. */
  commit(): Promise<void> {
    this.committing ??= (async () => {
      try {
        while (this.pendingDead.length > 0 || this.pendingAcks.size > 0) {
          const dead = this.pendingDead;
          const acks = new Map(this.pendingAcks);
          this.pendingDead = [];
          this.pendingAcks.clear();
          try {
            const multi = this.client.multi();
            for (const fields of dead) multi.xAdd(this.deadLetterStream, "*", fields);
            for (const [partition, ids] of acks) {
              multi.xAck(this.streamOf(partition), GROUP, ids);
              multi.xDel(this.streamOf(partition), ids);
            }
            await multi.exec();
            // Held until acknowledged: a history read meanwhile must not send them again, and a
            // partition is given up only once Redis knows they ended.
            for (const [partition, ids] of acks) for (const id of ids) this.owned.get(partition)?.held.delete(id);
          } catch (error) {
            this.pendingDead.unshift(...dead);
            for (const [partition, ids] of acks) this.pendingAcks.set(partition, [...ids, ...(this.pendingAcks.get(partition) ?? [])]);
            this.handlers?.onError?.(error as Error);
            if (this.stopped) return;
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
      } finally {
        this.committing = undefined;
      }
    })();
    return this.committing;
  }

  /** The partitions this process forwards now. */
  get ownedPartitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  /** Per partition: events not yet delivered (the group's lag plus those read and not acknowledged) and the lease owner. */
  async partitionStates(): Promise<{ partition: number; waiting: number; owner: string | null }[]> {
    const multi = this.client.multi();
    for (let partition = 0; partition < this.partitions; partition += 1) {
      multi.xLen(this.streamOf(partition));
      multi.get(this.leaseOf(partition));
    }
    const replies = (await multi.exec()) as unknown[];
    return Array.from({ length: this.partitions }, (_, partition) => ({ partition, waiting: Number(replies[partition * 2]), owner: (replies[partition * 2 + 1] as string | null) ?? null }));
  }

  /** The dead-letter stream, oldest first; fields another program wrote come back as empty text. */
  async listDeadLetters(): Promise<{ id: string; record: string; entry: string; partition: number }[]> {
    const entries = await this.client.xRange(this.deadLetterStream, "-", "+");
    return (entries ?? []).map(({ id, message }) => ({ id, record: String(message.record ?? ""), entry: String(message.entry ?? ""), partition: Number(message.partition ?? 0) || 0 }));
  }

  /** Puts dead letters back into their partitions (and off the dead-letter stream), in one transaction. */
  async replayDeadLetters(ids?: readonly string[]): Promise<number> {
    const all = await this.listDeadLetters();
    const chosen = ids === undefined ? all : all.filter((letter) => ids.includes(letter.id));
    if (chosen.length === 0) return 0;
    const multi = this.client.multi();
    for (const letter of chosen) {
      multi.xAdd(this.streamOf(letter.partition % this.partitions), "*", { r: letter.entry });
      multi.xDel(this.deadLetterStream, letter.id);
    }
    await multi.exec();
    return chosen.length;
  }

  /** Stops reading; the leases are given back (what was read and not ended is claimed by the next owner). */
  async stopForwarding(): Promise<void> {
    this.stopped = true;
    if (this.ticker !== undefined) clearInterval(this.ticker);
    await this.reading;
    await this.committing;
    await this.commit().catch(() => undefined);
    for (const partition of this.owned.keys()) await this.client.eval(RELEASE, { keys: [this.leaseOf(partition)], arguments: [this.consumer] }).catch(() => undefined);
    await this.client.zRem(`${this.prefix}:forwarders`, this.consumer).catch(() => undefined);
    this.owned.clear();
    await this.reader?.destroy();
  }

  async close(): Promise<void> {
    if (this.handlers !== undefined && !this.stopped) await this.stopForwarding();
    await this.client.destroy();
  }

  /** Heartbeat, lease renewal, and taking or giving up partitions towards an even share. */
  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const now = Date.now();
      const members = `${this.prefix}:forwarders`;
      await this.client.zAdd(members, { score: now, value: this.consumer });
      await this.client.zRemRangeByScore(members, 0, now - LEASE_MS);
      const alive = Math.max(1, await this.client.zCard(members));
      const share = Math.ceil(this.partitions / alive);
      for (const [partition, state] of this.owned) {
        const renewed = Number(await this.client.eval(RENEW, { keys: [this.leaseOf(partition)], arguments: [this.consumer, String(LEASE_MS)] }));
        // Lost (another took it after a pause): read no more of it.
        if (renewed === 0) state.draining = true;
        if (state.draining && state.held.size === 0) {
          await this.client.eval(RELEASE, { keys: [this.leaseOf(partition)], arguments: [this.consumer] });
          this.owned.delete(partition);
        }
      }
      const active = [...this.owned.values()].filter((state) => !state.draining).length;
      if (active > share) {
        // Give up the highest-numbered extra ones, once what was read from them has ended.
        const extra = [...this.owned.entries()].filter(([, state]) => !state.draining).sort(([a], [b]) => b - a).slice(0, active - share);
        for (const [, state] of extra) state.draining = true;
      } else if (active < share) {
        let wanted = share - active;
        const start = Number.parseInt(this.consumer.slice(-6), 16) % this.partitions;
        for (let step = 0; step < this.partitions && wanted > 0; step += 1) {
          const partition = (start + step) % this.partitions;
          if (this.owned.has(partition)) continue;
          const taken = await this.client.set(this.leaseOf(partition), this.consumer, { NX: true, PX: LEASE_MS });
          if (taken !== "OK") continue;
          await this.take(partition);
          wanted -= 1;
        }
      }
    } catch (error) {
      this.handlers?.onError?.(error as Error);
    }
  }

  /** A partition just leased: its group, and the events an earlier owner read and never ended, claimed first. */
  private async take(partition: number): Promise<void> {
    const stream = this.streamOf(partition);
    try {
      await this.client.xGroupCreate(stream, GROUP, "0", { MKSTREAM: true });
    } catch (error) {
      if (!String((error as Error).message).includes("BUSYGROUP")) throw error;
    }
    let start = "0-0";
    do {
      const claimed = await this.client.xAutoClaim(stream, GROUP, this.consumer, 0, start, { COUNT: 1_000 });
      start = claimed.nextId;
    } while (start !== "0-0");
    this.owned.set(partition, { draining: false, held: new Set(), history: "0" });
  }

  private async readLoop(): Promise<void> {
    const reader = this.reader as Client;
    await reader.connect().catch((error: Error) => this.handlers?.onError?.(error));
    while (!this.stopped) {
      try {
        const handlers = this.handlers as ForwardingHandlers;
        const readable = [...this.owned.entries()].filter(([, state]) => !state.draining);
        if (readable.length === 0 || handlers.outstanding() > 5_000) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        // A partition's own pending events (its history: claimed or read before a restart) come first.
        const history = readable.filter(([, state]) => state.history !== undefined);
        const streams = (history.length > 0 ? history : readable).map(([partition, state]) => ({ key: this.streamOf(partition), id: state.history ?? ">" }));
        const reply = await reader.xReadGroup(GROUP, this.consumer, streams, { COUNT: 500, ...(history.length > 0 ? {} : { BLOCK: 500 }) });
        const seen = new Set<number>();
        const entries: QueuedEntry[] = [];
        for (const stream of (reply ?? []) as { name: string; messages: { id: string; message: Record<string, string> }[] }[]) {
          const partition = Number(stream.name.slice(stream.name.lastIndexOf(":") + 1));
          const state = this.owned.get(partition);
          seen.add(partition);
          if (state === undefined || state.draining) continue;
          if (state.history !== undefined) state.history = stream.messages.length === 0 ? undefined : (stream.messages.at(-1) as { id: string }).id;
          for (const { id, message } of stream.messages) {
            // A pending entry deleted meanwhile comes back without its fields; one held already is being delivered.
            if (message === null || state.held.has(id)) continue;
            state.held.add(id);
            if (message.r === undefined) this.deadLetterUnreadable({ partition, id, text: JSON.stringify(message) }, "not an event of wh serve: the entry has no r field");
            else entries.push({ partition, id, text: String(message.r) });
          }
        }
        // A history read that returned nothing for a partition: its history is done.
        for (const [partition, state] of history) if (!seen.has(partition)) state.history = undefined;
        if (entries.length > 0) handlers.deliver(entries);
      } catch (error) {
        // Redis may have given us events whose answer was lost (a connection cut mid-read): they
        // are pending for us and would never come again with ">". Read every partition's pending
        // events again (those held already are skipped).
        for (const state of this.owned.values()) state.history ??= "0";
        this.handlers?.onError?.(error as Error);
        if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }
}
