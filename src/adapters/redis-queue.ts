import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import { UsageError } from "../core/errors.js";
import { redactUrlText } from "../core/redact.js";
import { GROUP, newClient, QueueKeys, type RedisClient as Client } from "./redis-connection.js";


/** Redis is unreachable or refused a write: accepting answers 503, forwarding waits. */
export class QueueUnavailable extends Error {}

export const DEFAULT_PARTITIONS = 64;
/** How long a partition's lease lasts without renewal; renewed every tick. */
const LEASE_MS = 6_000;
const TICK_MS = 1_000;
/**
 * An owner stops delivering a partition this long before its lease can lapse in Redis (counted
 * from when its last renewal was sent): timers fire late on a busy machine.
 */
const FENCE_MARGIN_MS = 1_000;
/**
 * A new owner of a partition that was not given up cleanly (a lease that lapsed: Redis away, a
 * crash) claims its events this long after taking it: by then the previous owner has cut its
 * deliveries (FENCE_MARGIN_MS before the lapse) and a read it had sent (blocking for up to
 * BLOCK_MS) has been answered, so the two never deliver one partition at once.
 */
const TAKEOVER_WAIT_MS = 2_000;
/**
 * After Redis was away, a forwarder takes partitions only once its heartbeat has gone through
 * again for this long: forwarders that come back together count each other first, and none takes
 * every partition with its backlog (an extra one is given up only once what was read from it is
 * delivered).
 */
const SETTLE_MS = 1_000;
/** How often an owned partition's pending events are claimed and read again, so that none stays pending. */
const SWEEP_MS = 5_000;
const BLOCK_MS = 500;

/**
 * Takes a free lease (KEYS[1]) and marks the partition taken (KEYS[2], kept until it is given up
 * cleanly): -1 when another holds the lease, 1 when the mark of an earlier owner was still there
 * (its lease lapsed), 0 when not.
 */
const TAKE = `if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return -1 end
local unclean = redis.call("exists", KEYS[2])
redis.call("set", KEYS[2], ARGV[1])
return unclean`;
const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
/** Gives up a lease still held; with ARGV[2] "clean" (nothing read is left unacknowledged or being read) the taken mark goes too. */
const RELEASE = `if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == "clean" then redis.call("del", KEYS[2]) end
return redis.call("del", KEYS[1])`;

/** An event read from a partition: its stream entry id and the record text (source and event). */
export interface QueuedEntry {
  partition: number;
  id: string;
  text: string;
  /**
   * Aborted when this process's lease on the partition ends (lapsed, lost, given up): the event's
   * delivery must stop, and the event stays pending for the partition's next owner.
   */
  lease: AbortSignal;
}

/** What XREADGROUP answers per stream (a pending entry deleted meanwhile has no fields). */
type StreamReply = { name: string; messages: { id: string; message: Record<string, string> | null }[] };

/** One lease on a partition: from taking it until it ends. */
interface Tenure {
  readonly lease: AbortController;
  /** Until when (performance.now()) the lease is surely still this process's; the fence fires then. */
  validUntil: number;
  fence: NodeJS.Timeout | undefined;
  /** When its pending events are claimed next; they are read, and new ones after them, only once claimed. */
  sweepAt: number;
  swept: boolean;
  /** Being given up: nothing more is read from it. */
  draining: boolean;
  /** The ids of the events read and not yet acknowledged. */
  held: Set<string>;
  /** Reads of it waiting for Redis's answer. */
  reads: number;
  /** Acknowledged while a read of it was on its way: they leave `held` once its answer has been handled. */
  acked: string[];
  /** While its pending events are read (after a sweep, or after a read whose answer was lost): the last id read of them. */
  history: string | undefined;
}

export interface ForwardingHandlers {
  /** Entries to deliver, in stream order per partition: a taken-over partition's pending ones first. */
  deliver(entries: QueuedEntry[]): void;
  /** How many delivered-but-not-ended entries the process holds: reading waits above the limit. */
  outstanding(): number;
  onError?(error: Error): void;
}

/** Nothing this process read from the partition is left unacknowledged, and no read of it is on its way. */
function idle(tenure: Tenure): boolean {
  return tenure.held.size === 0 && tenure.reads === 0;
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
 */
export class RedisQueue {
  readonly consumer = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly owned = new Map<number, Tenure>();
  private readonly pendingAcks = new Map<number, string[]>();
  private pendingDead: Record<string, string>[] = [];
  private committing: Promise<void> | undefined;
  private reader: Client | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /** Since when every heartbeat has gone through in time (from the start: always); undefined after one did not. */
  private beatingSince: number | undefined = Number.NEGATIVE_INFINITY;
  private stopped = false;
  private reading: Promise<void> | undefined;
  private handlers: ForwardingHandlers | undefined;

  private constructor(
    private readonly client: Client,
    private readonly connectUrl: string,
    readonly url: string,
    readonly partitions: number,
    private readonly keys: QueueKeys,
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
      throw new UsageError(`--partitions ${options.partitions}: the queue at ${shown} has ${recorded} partitions, fixed when it was created`, { hint: `leave --partitions out, or give --partitions ${recorded}` });
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
    this.reader = newClient(this.connectUrl);
    const tick = (): void => {
      // One tick at a time: one that waits on a frozen Redis is not joined by others, which would
      // all go on together with what they knew before when it answers.
      this.ticking ??= this.tick().finally(() => (this.ticking = undefined));
    };
    tick();
    this.ticker = setInterval(tick, TICK_MS);
    this.reading = this.readLoop();
  }

  /** Marks an event as ended (see the class comment); written at the next commit. */
  ended(partition: number, id: string): void {
    const ids = this.pendingAcks.get(partition) ?? [];
    ids.push(id);
    this.pendingAcks.set(partition, ids);
  }

  /**
   * An event whose delivery was cut or never started: it stays pending. Its partition is given
   * up (unless that happened already), so that none of the user's later events overtakes it; the
   * partition's next owner, perhaps this process again, delivers it.
   */
  unfinished(entry: QueuedEntry): void {
    const tenure = this.owned.get(entry.partition);
    if (tenure?.lease.signal === entry.lease) void this.drop(entry.partition, tenure);
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
            for (const fields of dead) multi.xAdd(this.keys.deadLetters, "*", fields);
            for (const [partition, ids] of acks) {
              multi.xAck(this.keys.stream(partition), GROUP, ids);
              multi.xDel(this.keys.stream(partition), ids);
            }
            await multi.exec();
            // Held until acknowledged: a history read meanwhile must not send them again, and a
            // partition is given up only once Redis knows they ended. A read sent before the
            // acknowledgement (on the other connection) may still bring them back as pending.
            for (const [partition, ids] of acks) {
              const tenure = this.owned.get(partition);
              if (tenure?.reads === 0) for (const id of ids) tenure.held.delete(id);
              else tenure?.acked.push(...ids);
            }
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
      multi.xLen(this.keys.stream(partition));
      multi.get(this.keys.lease(partition));
    }
    const replies = (await multi.exec()) as unknown[];
    return Array.from({ length: this.partitions }, (_, partition) => ({ partition, waiting: Number(replies[partition * 2]), owner: (replies[partition * 2 + 1] as string | null) ?? null }));
  }

  /** The dead-letter stream, oldest first; fields another program wrote come back as empty text. */
  async listDeadLetters(): Promise<{ id: string; record: string; entry: string; partition: number }[]> {
    const entries = await this.client.xRange(this.keys.deadLetters, "-", "+");
    return (entries ?? []).map(({ id, message }) => ({ id, record: String(message.record ?? ""), entry: String(message.entry ?? ""), partition: Number(message.partition ?? 0) || 0 }));
  }

  /** Puts dead letters back into their partitions (and off the dead-letter stream), in one transaction. */
  async replayDeadLetters(ids?: readonly string[]): Promise<number> {
    const all = await this.listDeadLetters();
    const chosen = ids === undefined ? all : all.filter((letter) => ids.includes(letter.id));
    if (chosen.length === 0) return 0;
    const multi = this.client.multi();
    for (const letter of chosen) {
      multi.xAdd(this.keys.stream(letter.partition % this.partitions), "*", { r: letter.entry });
      multi.xDel(this.keys.deadLetters, letter.id);
    }
    await multi.exec();
    return chosen.length;
  }

  /** Stops reading; the leases are given back (what was read and not ended is claimed by the next owner). */
  async stopForwarding(): Promise<void> {
    this.stopped = true;
    if (this.ticker !== undefined) clearInterval(this.ticker);
    await this.ticking;
    await this.reading;
    await this.committing;
    await this.commit().catch(() => undefined);
    await Promise.all([...this.owned].map(([partition, tenure]) => this.drop(partition, tenure)));
    await this.client.zRem(this.keys.forwarders, this.consumer).catch(() => undefined);
    await this.reader?.destroy();
  }

  async close(): Promise<void> {
    if (this.handlers !== undefined && !this.stopped) await this.stopForwarding();
    await this.client.destroy();
  }

  /** Heartbeat, lease renewal, taking or giving up partitions towards an even share, and claiming pending events. */
  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const now = Date.now();
      const members = this.keys.forwarders;
      await this.client.zAdd(members, { score: now, value: this.consumer });
      // A heartbeat answered late (a frozen Redis) is missed like one that failed.
      this.beatingSince = Date.now() - now > TICK_MS ? undefined : (this.beatingSince ?? now);
      await this.client.zRemRangeByScore(members, 0, now - LEASE_MS);
      const alive = Math.max(1, await this.client.zCard(members));
      await this.renew();
      await this.share(Math.ceil(this.partitions / alive), this.beatingSince !== undefined && now - this.beatingSince >= SETTLE_MS);
      await this.sweep();
    } catch (error) {
      this.beatingSince = undefined;
      this.handlers?.onError?.(error as Error);
    }
  }

  /** Renews every lease held; one lost, or given up with nothing of it left unacknowledged, is dropped. */
  private async renew(): Promise<void> {
    await Promise.all(
      [...this.owned].map(async ([partition, tenure]) => {
        const sentAt = performance.now();
        const renewed = Number(await this.client.eval(RENEW, { keys: [this.keys.lease(partition)], arguments: [this.consumer, String(LEASE_MS)] }));
        if (this.owned.get(partition) !== tenure) return;
        if (renewed === 0 || (tenure.draining && idle(tenure))) await this.drop(partition, tenure);
        else this.extend(partition, tenure, sentAt);
      }),
    );
  }

  /** Gives up the highest-numbered partitions beyond `share` (once what was read from them has ended), or takes free ones up to it when `settled`. */
  private async share(share: number, settled: boolean): Promise<void> {
    const active = [...this.owned.entries()].filter(([, tenure]) => !tenure.draining);
    if (active.length > share) {
      for (const [, tenure] of active.sort(([a], [b]) => b - a).slice(0, active.length - share)) tenure.draining = true;
      return;
    }
    if (!settled) return;
    let wanted = share - active.length;
    const start = Number.parseInt(this.consumer.slice(-6), 16) % this.partitions;
    for (let step = 0; step < this.partitions && wanted > 0 && !this.stopped; step += 1) {
      const partition = (start + step) % this.partitions;
      if (this.owned.has(partition)) continue;
      const sentAt = performance.now();
      const taken = Number(await this.client.eval(TAKE, { keys: [this.keys.lease(partition), this.keys.taken(partition)], arguments: [this.consumer, String(LEASE_MS)] }));
      if (taken < 0) continue;
      const lease = new AbortController();
      // Every delivery in flight from the partition listens to it.
      setMaxListeners(0, lease.signal);
      const tenure: Tenure = { lease, validUntil: 0, fence: undefined, sweepAt: performance.now() + (taken === 1 ? TAKEOVER_WAIT_MS : 0), swept: false, draining: false, held: new Set(), reads: 0, acked: [], history: undefined };
      this.owned.set(partition, tenure);
      this.extend(partition, tenure, sentAt);
      wanted -= 1;
    }
  }

  /**
   * Claims the pending events of each partition whose time has come (first: TAKEOVER_WAIT_MS after
   * taking it; then every SWEEP_MS): those an earlier owner read and never ended, and any read
   * late for another consumer. They are then read again, before new ones.
   */
  private async sweep(): Promise<void> {
    for (const [partition, tenure] of this.owned) {
      if (tenure.draining || performance.now() < tenure.sweepAt || !this.holds(partition, tenure)) continue;
      const stream = this.keys.stream(partition);
      if (!tenure.swept) {
        try {
          await this.client.xGroupCreate(stream, GROUP, "0", { MKSTREAM: true });
        } catch (error) {
          if (!String((error as Error).message).includes("BUSYGROUP")) throw error;
        }
      }
      let start = "0-0";
      do {
        const claimed = await this.client.xAutoClaim(stream, GROUP, this.consumer, 0, start, { COUNT: 1_000 });
        start = claimed.nextId;
      } while (start !== "0-0");
      tenure.history ??= "0";
      tenure.swept = true;
      tenure.sweepAt = performance.now() + SWEEP_MS;
    }
  }

  /** A renewal (or the taking) sent at `sentAt` succeeded: the lease is surely ours until FENCE_MARGIN_MS before it can lapse. */
  private extend(partition: number, tenure: Tenure, sentAt: number): void {
    tenure.validUntil = sentAt + LEASE_MS - FENCE_MARGIN_MS;
    clearTimeout(tenure.fence);
    tenure.fence = setTimeout(() => void this.drop(partition, tenure), tenure.validUntil - performance.now());
  }

  /** True while the partition's lease is this tenure's; one whose time ran out (its fence not yet fired) is dropped now. */
  private holds(partition: number, tenure: Tenure): boolean {
    if (this.owned.get(partition) !== tenure) return false;
    if (performance.now() < tenure.validUntil) return true;
    void this.drop(partition, tenure);
    return false;
  }

  /**
   * Ends a tenure: its deliveries are cut (their events stay pending), nothing more is read, and
   * the lease is released if it is still this process's (when Redis answers). Cleanly when it is
   * idle and was swept (a previous owner's takeover wait is over): the next owner need not wait.
   */
  private async drop(partition: number, tenure: Tenure): Promise<void> {
    if (this.owned.get(partition) !== tenure) return;
    this.owned.delete(partition);
    clearTimeout(tenure.fence);
    tenure.lease.abort();
    await this.client.eval(RELEASE, { keys: [this.keys.lease(partition), this.keys.taken(partition)], arguments: [this.consumer, tenure.swept && idle(tenure) ? "clean" : "unclean"] }).catch(() => undefined);
  }

  private async readLoop(): Promise<void> {
    const reader = this.reader as Client;
    await reader.connect().catch((error: Error) => this.handlers?.onError?.(error));
    while (!this.stopped) {
      try {
        const handlers = this.handlers as ForwardingHandlers;
        const readable = [...this.owned.entries()].filter(([partition, tenure]) => !tenure.draining && tenure.swept && this.holds(partition, tenure));
        if (readable.length === 0 || handlers.outstanding() > 5_000) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        const entries = await this.read(reader, readable);
        if (entries.length > 0) handlers.deliver(entries);
      } catch (error) {
        // Redis may have given us events whose answer was lost (a connection cut mid-read): they
        // are pending for us and would never come again with ">". Read every partition's pending
        // events again (those held already are skipped).
        for (const tenure of this.owned.values()) tenure.history ??= "0";
        this.handlers?.onError?.(error as Error);
        if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /** One XREADGROUP of the partitions' pending events (their history) if any have some, else of new ones. */
  private async read(reader: Client, readable: [number, Tenure][]): Promise<QueuedEntry[]> {
    const history = readable.filter(([, tenure]) => tenure.history !== undefined);
    const asked = new Map(history.length > 0 ? history : readable);
    const streams = [...asked].map(([partition, tenure]) => ({ key: this.keys.stream(partition), id: tenure.history ?? ">" }));
    for (const tenure of asked.values()) tenure.reads += 1;
    try {
      const reply = await reader.xReadGroup(GROUP, this.consumer, streams, { COUNT: 500, ...(history.length > 0 ? {} : { BLOCK: BLOCK_MS }) });
      return this.received((reply ?? []) as StreamReply[], asked, history);
    } finally {
      for (const tenure of asked.values()) {
        tenure.reads -= 1;
        for (const id of tenure.acked.splice(0)) tenure.held.delete(id);
      }
    }
  }

  /** The entries a read brought that are to be delivered now: of leases still held, and not held already. */
  private received(reply: StreamReply[], asked: Map<number, Tenure>, history: [number, Tenure][]): QueuedEntry[] {
    const seen = new Set<number>();
    const entries: QueuedEntry[] = [];
    for (const stream of reply) {
      const partition = Number(stream.name.slice(stream.name.lastIndexOf(":") + 1));
      const tenure = asked.get(partition);
      seen.add(partition);
      // Read for a lease that has ended meanwhile: left pending, for the partition's next owner.
      if (tenure === undefined || !this.holds(partition, tenure)) continue;
      if (tenure.history !== undefined) tenure.history = stream.messages.length === 0 ? undefined : (stream.messages.at(-1) as { id: string }).id;
      for (const { id, message } of stream.messages) {
        // A pending entry deleted meanwhile comes back without its fields; one held already is being delivered.
        if (message === null || tenure.held.has(id)) continue;
        tenure.held.add(id);
        const entry = { partition, id, text: message.r === undefined ? JSON.stringify(message) : String(message.r), lease: tenure.lease.signal };
        if (message.r === undefined) this.deadLetterUnreadable(entry, "not an event of wh serve: the entry has no r field");
        else entries.push(entry);
      }
    }
    // A history read that returned nothing for a partition: its history is done.
    for (const [partition, tenure] of history) if (!seen.has(partition)) tenure.history = undefined;
    return entries;
  }
}
