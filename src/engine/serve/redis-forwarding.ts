import type { RedisQueue } from "../../adapters/redis/queue.js";
import type { QueuedEntry } from "../../adapters/redis/reader.js";
import type { DeadLetterLog, FinishedLog } from "../delivery-job.js";

/**
 * The runner's journal and dead-letter log for events read from Redis: each job's number stands
 * for the stream entry it came from. An ended event is acknowledged in Redis, and a dead letter
 * is added to the dead-letter stream in the same transaction as its acknowledgement (see
 * RedisQueue#commit), so nothing leaves a partition that is not delivered or dead-lettered.
 */
export class RedisForwardLogs {
  private readonly entries = new Map<number, QueuedEntry>();
  private next = 0;
  /** Dead letters handed to the queue, and those of them flushed (written with their acks at the next commit). */
  private appended = 0;
  private dead = 0;

  constructor(private readonly queue: RedisQueue) {}

  /** A job number for an entry read from a partition. */
  track(entry: QueuedEntry): number {
    this.next += 1;
    this.entries.set(this.next, entry);
    return this.next;
  }

  /** The entry of a job that has ended, no longer tracked. */
  private forget(number: number): QueuedEntry | undefined {
    const entry = this.entries.get(number);
    this.entries.delete(number);
    return entry;
  }

  /** Entries read and not yet ended. */
  get outstanding(): number {
    return this.entries.size;
  }

  readonly journal: FinishedLog = {
    markFinished: ({ number }) => {
      const entry = this.forget(number);
      if (entry !== undefined) this.queue.ended(entry.partition, entry.id);
    },
    // Cut (its partition's lease ended) or never started: still pending in Redis.
    markUnfinished: (number) => {
      const entry = this.forget(number);
      if (entry !== undefined) this.queue.unfinished(entry);
    },
    flush: () => {
      void this.queue.commit();
    },
    broken: undefined,
  };

  readonly deadLetters: DeadLetterLog = ((logs: RedisForwardLogs): DeadLetterLog => ({
    append(record) {
      const { line } = JSON.parse(record) as { line: number };
      const entry = logs.entries.get(line);
      if (entry !== undefined) logs.queue.deadLetter(record.trimEnd(), entry);
      logs.appended += 1;
    },
    // Written with the acknowledgements, at the journal's flush: counting them whole here is what
    // lets the runner mark them finished, which acknowledges them in the same transaction.
    flush: () => {
      logs.dead += logs.appended;
      logs.appended = 0;
    },
    get count() {
      return logs.dead;
    },
  }))(this);
}
