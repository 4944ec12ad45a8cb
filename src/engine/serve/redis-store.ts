import { AppendFile } from "../../adapters/append-file.js";
import { QueueUnavailable, RedisQueue, type ReplicaWait } from "../../adapters/redis/queue.js";
import type { Destination } from "../../config/resolve.js";
import type { Registry } from "../../core/prometheus.js";
import { shardOfKey } from "../../core/shard.js";
import { JobQueue } from "../job-queue.js";
import { RedisForwardLogs } from "./redis-forwarding.js";
import type { DeadLetterLog, DeliveryJob } from "../delivery-job.js";
import type { EventStore } from "./event-store.js";
import { readStored, type AcceptedEvent, type JobInput, type JobMaker } from "./stored-event.js";

export interface RedisStoreOptions {
  url: string;
  /** Of a new queue; an existing queue keeps its own. */
  partitions?: number | undefined;
  /** Answer 200 only once this many replicas have the events (see ReplicaWait). */
  wait?: ReplicaWait | undefined;
  /** Dead letters also to this file (they always go to the dead-letter stream). */
  deadLetterPath?: string | undefined;
  onWarning?: ((message: string) => void) | undefined;
}

/**
 * Redis Streams as wh serve's store (`--queue redis://…`): accepted events are added to their
 * partition (a stable hash of the user key) in one transaction before the 200; the forwarders of
 * this process deliver the partitions it leases, read in bounded windows and pushed to each
 * destination's queue; an event is acknowledged when its delivery ends, a dead letter in the same
 * transaction as its acknowledgement.
 */
export class RedisStore implements EventStore {
  readonly recovered = 0;
  private readonly logsOf: RedisForwardLogs;
  private partitionStates: Awaited<ReturnType<RedisQueue["partitionStates"]>> = [];
  private up = 1;

  private constructor(
    private readonly queue: RedisQueue,
    private readonly options: RedisStoreOptions,
  ) {
    this.logsOf = new RedisForwardLogs(queue);
  }

  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    return new RedisStore(await RedisQueue.connect(options.url, { partitions: options.partitions, wait: options.wait }), options);
  }

  async append(events: readonly AcceptedEvent[]): Promise<string | undefined> {
    const entries = events.map(({ userKey, stored, text }) => {
      const key = userKey ?? String(stored.event.messageId);
      return { partition: shardOfKey(key, this.queue.partitions), text };
    });
    try {
      await this.queue.append(entries);
    } catch (error) {
      if (error instanceof QueueUnavailable) return `${error.message}; retry later`;
      throw error;
    }
    return undefined;
  }

  logs(): { journal: RedisForwardLogs["journal"]; deadLetter: DeadLetterLog; close(): void } {
    const path = this.options.deadLetterPath;
    const file = path === undefined ? undefined : AppendFile.open(path, "the dead-letter file", "append");
    const stream = this.logsOf.deadLetters;
    return { journal: this.logsOf.journal, deadLetter: file === undefined ? stream : both(stream, file), close: () => file?.close() };
  }

  feed(destinations: readonly Destination[], makeJob: JobMaker): Map<Destination, JobInput> {
    const queues = new Map(destinations.map((destination) => [destination, new JobQueue()]));
    if (destinations.length > 0) {
      this.queue.startForwarding({
        deliver: (entries) => {
          const batches = new Map<JobQueue, DeliveryJob[]>();
          for (const entry of entries) {
            const stored = readStored(entry.text);
            if (typeof stored === "string") {
              this.queue.deadLetterUnreadable(entry, `not an event of wh serve: ${stored}`);
              continue;
            }
            const { destination, job } = makeJob(this.logsOf.track(entry), stored);
            // Cut when this process's lease on the partition ends: the event stays pending for the next owner.
            job.signal = entry.lease;
            const queue = queues.get(destination) as JobQueue;
            const batch = batches.get(queue);
            if (batch === undefined) batches.set(queue, [job]);
            else batch.push(job);
          }
          for (const [queue, jobs] of batches) queue.push(jobs);
        },
        outstanding: () => this.logsOf.outstanding,
        onError: (error) => this.options.onWarning?.(`Redis: ${error.message}; forwarding waits and goes on when it answers`),
        onWarning: (message) => this.options.onWarning?.(message),
      });
    }
    return new Map([...queues].map(([destination, queue]) => [destination, { jobs: queue, stop: () => queue.end() }]));
  }

  lag(): undefined {
    return undefined;
  }

  backlog(): undefined {
    return undefined;
  }

  health(): Record<string, unknown> {
    return { queue: { url: this.queue.url, partitions: this.queue.partitions, owned: this.queue.ownedPartitions, consumer: this.queue.consumer } };
  }

  addMetrics(registry: Registry): void {
    registry.gauge("wh_serve_queue_up", "1 when Redis answered the last scrape, else 0.", () => this.up);
    registry.gaugeFamily("wh_serve_partition_lag", "Events waiting in each partition (not yet delivered or dead-lettered).", () =>
      this.partitionStates.map((state) => ({ labels: { partition: String(state.partition) }, value: state.waiting })),
    );
    registry.gaugeFamily("wh_serve_partition_owner", "The forwarder holding each partition's lease (1 per partition with an owner).", () =>
      this.partitionStates
        .filter((state) => state.owner !== null)
        .map((state) => ({ labels: { partition: String(state.partition), owner: state.owner as string }, value: 1 })),
    );
    registry.gauge("wh_serve_partitions_owned", "Partitions this process forwards.", () => this.queue.ownedPartitions.length);
  }

  async refreshMetrics(): Promise<void> {
    try {
      this.partitionStates = await this.queue.partitionStates();
      this.up = 1;
    } catch {
      this.up = 0;
    }
  }

  close(): Promise<void> {
    return this.queue.close();
  }
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
