import { GROUP, type QueueKeys, type RedisClient } from "./connection.js";
import type { PartitionLeases } from "./leases.js";
import { FENCE, type Tenure } from "./tenure.js";

/** How long a read of new events waits for some to come. */
const BLOCK_MS = 500;
/**
 * On a cluster, reads of several partitions do not block (each blocked read would hold the reading
 * connection to its node, which the node's other partitions share, in turn): a read that brought
 * nothing is sent again this long after, with the others that brought nothing (see poll).
 */
const POLL_MS = 100;
/** Entries one read of a partition brings at most. */
const COUNT = 500;
/** XREADGROUP of the stream from ARGV[5] for the consumer ARGV[3] of group ARGV[2], fenced by the tenure's lease (see FENCE). */
const READ = `${FENCE}return redis.call("xreadgroup", "GROUP", ARGV[2], ARGV[3], "COUNT", ARGV[4], "STREAMS", KEYS[1], ARGV[5])`;
/** Delivered-but-not-ended entries above which reading waits. */
const MAX_OUTSTANDING = 5_000;

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

export interface ForwardingHandlers {
  /** Entries to deliver, in stream order per partition: a taken-over partition's pending ones first. */
  deliver(entries: QueuedEntry[]): void;
  /** How many delivered-but-not-ended entries the process holds: reading waits above the limit. */
  outstanding(): number;
  onError?(error: Error): void;
  /** Something the user should know that is not a failure of Redis (a stop that gave up waiting on it). */
  onWarning?(message: string): void;
}

/** What XREADGROUP answers per stream (a pending entry deleted meanwhile has no fields). */
type StreamReply = { name: string; messages: { id: string; message: Record<string, string> | null }[] };
/** The same, as a script hands it on: fields and values in turn. */
type RawStreamReply = [string, [string, string[] | null][]][];

const pause = (ms: number): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads the owned partitions on a connection of its own (a read blocks it for up to BLOCK_MS):
 * each partition's pending events (its history) first, then new ones, every entry once while
 * the lease it was read under holds. On one server every partition is read in one XREADGROUP; on
 * a cluster each partition on its own (see run).
 */
export class PartitionReader {
  private stopped = false;
  private readonly loop: Promise<void>;
  private polling: Promise<unknown> | undefined;

  constructor(
    private readonly reader: RedisClient,
    private readonly keys: QueueKeys,
    private readonly consumer: string,
    private readonly leases: PartitionLeases,
    private readonly handlers: ForwardingHandlers,
    /** An entry that is not an event of wh serve (no `r` field): it is dead-lettered and acknowledged. */
    private readonly unreadable: (entry: QueuedEntry, reason: string) => void,
  ) {
    this.loop = this.run();
  }

  /** Resolves once the reads under way (if any) have been answered and handled. */
  stop(): Promise<void> {
    this.stopped = true;
    return this.loop;
  }

  private async run(): Promise<void> {
    await this.reader.connect().catch((error: Error) => this.handlers.onError?.(error));
    if (!this.keys.cluster) {
      while (!this.stopped) {
        await this.follow(() => this.leases.readable());
        if (!this.stopped) await pause(50);
      }
      return;
    }
    // On a cluster each partition is read on its own, and what it brings handed on at once: a
    // master that does not answer (frozen, unreachable) holds only the reads of its own partitions.
    const following = new Map<Tenure, Promise<void>>();
    while (!this.stopped) {
      for (const [partition, tenure] of this.leases.readable()) {
        if (following.has(tenure)) continue;
        const one = (): [number, Tenure][] => (this.leases.isReadable(partition, tenure) ? [[partition, tenure]] : []);
        following.set(
          tenure,
          this.follow(one).finally(() => following.delete(tenure)),
        );
      }
      await pause(50);
    }
    await Promise.all(following.values());
  }

  /**
   * Waits POLL_MS, together with the other partitions' reads that brought nothing: they go out
   * again in one turn of the event loop, written together to each node, not each on its own timer.
   */
  private poll(): Promise<unknown> {
    this.polling ??= pause(POLL_MS).finally(() => (this.polling = undefined));
    return this.polling;
  }

  /** Reads the partitions `select` gives, again and again, until it gives none or reading stops. */
  private async follow(select: () => [number, Tenure][]): Promise<void> {
    while (!this.stopped) {
      const readable = select();
      if (readable.length === 0) return;
      if (this.handlers.outstanding() > MAX_OUTSTANDING) {
        await pause(50);
        continue;
      }
      try {
        const { entries, waited } = await this.read(readable);
        if (entries.length > 0) this.handlers.deliver(entries);
        else if (!waited) await this.poll();
      } catch (error) {
        // Redis may have given us events whose answer was lost (a connection cut mid-read): they
        // are pending for us and would never come again with ">". Read the partitions' pending
        // events again (those held already are skipped).
        for (const [, tenure] of readable) tenure.history ??= "0";
        this.handlers.onError?.(error as Error);
        if (!this.stopped) await pause(500);
      }
    }
  }

  /**
   * One XREADGROUP of the partitions' pending events (their history) if any have some, else of new
   * ones: on a server, of every partition at once (blocking when they are new ones); on a cluster,
   * where run() reads each partition on its own, a fenced script of the one partition.
   */
  private async read(readable: [number, Tenure][]): Promise<{ entries: QueuedEntry[]; waited: boolean }> {
    const history = readable.filter(([, tenure]) => tenure.history !== undefined);
    const asked = new Map(history.length > 0 ? history : readable);
    // On a cluster a read is a script, which cannot block.
    const block = !this.keys.cluster && history.length === 0;
    for (const tenure of asked.values()) tenure.reads += 1;
    try {
      const streams = [...asked].map(([partition, tenure]) => ({ key: this.keys.stream(partition), id: tenure.history ?? ">" }));
      const reply = this.keys.cluster
        ? await this.readFenced(...(readable[0] as [number, Tenure]))
        : ((await this.reader.xReadGroup(GROUP, this.consumer, streams, { COUNT, ...(block ? { BLOCK: BLOCK_MS } : {}) })) as StreamReply[] | null);
      // A history read that brought nothing ends the history: the next read is not waited for either.
      return { entries: this.received(reply ?? [], asked, history), waited: block || history.length > 0 };
    } finally {
      for (const tenure of asked.values()) {
        tenure.reads -= 1;
        for (const id of tenure.acked.splice(0)) tenure.held.delete(id);
      }
    }
  }

  /**
   * One partition's read on a cluster, done only while the tenure holds its lease (see FENCE: a
   * read answered MOVED after a failover may run long after it was sent). On one server every
   * partition is read in one blocking XREADGROUP, unfenced (a script cannot block): a command runs
   * there on the server it was sent to, and the takeover wait covers a read still on its way when
   * the partition changes hands (TAKEOVER_WAIT_MS; a network that holds one longer is not covered).
   */
  private async readFenced(partition: number, tenure: Tenure): Promise<StreamReply[] | null> {
    const reply = (await this.reader.eval(READ, {
      keys: [this.keys.stream(partition), this.keys.lease(partition)],
      arguments: [tenure.token, GROUP, this.consumer, String(COUNT), tenure.history ?? ">"],
    })) as RawStreamReply | null;
    return (
      reply?.map(([name, messages]) => ({
        name,
        messages: messages.map(([id, fields]) => ({ id, message: fields === null ? null : fieldsOf(fields) })),
      })) ?? null
    );
  }

  /** The entries a read brought that are to be delivered now: of leases still held, and not held already. */
  private received(reply: StreamReply[], asked: Map<number, Tenure>, history: [number, Tenure][]): QueuedEntry[] {
    const seen = new Set<number>();
    const entries: QueuedEntry[] = [];
    const partitionOf = new Map([...asked.keys()].map((partition) => [this.keys.stream(partition), partition]));
    for (const stream of reply) {
      const partition = partitionOf.get(stream.name) ?? -1;
      const tenure = asked.get(partition);
      seen.add(partition);
      // Read for a lease that has ended meanwhile: left pending, for the partition's next owner.
      if (tenure === undefined || !this.leases.holds(partition, tenure)) continue;
      if (tenure.history !== undefined) tenure.history = stream.messages.length === 0 ? undefined : (stream.messages.at(-1) as { id: string }).id;
      for (const { id, message } of stream.messages) {
        // A pending entry deleted meanwhile comes back without its fields; one held already is being delivered.
        if (message === null || tenure.held.has(id)) continue;
        tenure.held.add(id);
        const entry = { partition, id, text: message.r === undefined ? JSON.stringify(message) : String(message.r), lease: tenure.lease.signal };
        if (message.r === undefined) this.unreadable(entry, "not an event of wh serve: the entry has no r field");
        else entries.push(entry);
      }
    }
    // A history read that returned nothing for a partition: its history is done.
    for (const [partition, tenure] of history) if (!seen.has(partition)) tenure.history = undefined;
    return entries;
  }
}

/** A stream entry's fields and values, given in turn, as a record. */
function fieldsOf(list: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let index = 0; index + 1 < list.length; index += 2) fields[list[index] as string] = list[index + 1] as string;
  return fields;
}
