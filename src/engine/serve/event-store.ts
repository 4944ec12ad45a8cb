import type { Destination } from "../../config/resolve.js";
import type { Registry } from "../../core/prometheus.js";
import type { DeadLetterLog, FinishedLog } from "../delivery-job.js";
import type { AcceptedEvent, JobInput, JobMaker } from "./stored-event.js";

/**
 * Where `wh serve` keeps what it accepted until its delivery ends: the local spool, or Redis
 * Streams shared by several processes. Accepting appends; each forwarder reads its jobs from it,
 * records each job's end in its journal (an ack) and failures in its dead-letter log.
 */
export interface EventStore {
  /** Events accepted by an earlier run and not yet delivered, to be delivered now. */
  readonly recovered: number;
  /**
   * Stores a source's accepted events durably; resolves once they are (then the request may be
   * answered 200), or with why they could not be (answered 503).
   */
  append(events: readonly AcceptedEvent[]): Promise<string | undefined>;
  /** The journal and dead-letter log of a destination's forwarder, and what to close once it ends. */
  logs(destination: Destination): { journal: FinishedLog; deadLetter: DeadLetterLog | undefined; close(): void };
  /**
   * Starts feeding the forwarders: the jobs of each destination (`makeJob` says whose a stored
   * event is). Called once, with every destination that forwards.
   */
  feed(destinations: readonly Destination[], makeJob: JobMaker): Map<Destination, JobInput>;
  /**
   * Events stored and not yet handed to their forwarder (the slowest, with several), when the
   * store knows it locally; undefined otherwise (Redis: other processes forward too).
   */
  lag(): number | undefined;
  /** Events stored and not yet ended, when the store knows it locally; undefined otherwise (Redis: the partitions are elsewhere). */
  backlog(): number | undefined;
  /** The store's part of /health. */
  health(): Record<string, unknown>;
  /** Adds the store's gauges to /metrics. */
  addMetrics(registry: Registry): void;
  /** Reads what /metrics shows that must be fetched (Redis's partition states); never throws. */
  refreshMetrics(): Promise<void>;
  close(): Promise<void>;
}
