import type { InputLine } from "../adapters/line-reader.js";
import type { DeliveryReport } from "../core/deliver.js";
import type { DeliveryJob, JobOutcome } from "./delivery-job.js";
import type { WaitReason } from "./retry-waits.js";
import type { RunSummary } from "./run-deliveries.js";
import type { RunCounts } from "./run-recorder.js";

// What `wh replay --workers`' threads say to each other (engine/replay-workers.ts, replay-worker-side.ts).

/** What the parent tells a worker: its next lines, that there are no more, to stop (as Ctrl-C), to retry now. */
export type ToWorker = { t: "lines"; lines: InputLine[] } | { t: "end" } | { t: "stop" } | { t: "retry-now" };

/** What a worker's progress says; its requests on the wire as two counts (InFlight's functions stay in the worker). */
export interface WorkerProgress {
  counts: RunCounts;
  read: number;
  retrying: number;
  waiting: WaitReason[];
  inFlight: number;
  hanging: number;
}

/** A job's end, for the parent's display: the job without its body (the display reads its type, messageId and skip). */
export interface RelayedOutcome {
  job: DeliveryJob;
  outcome: JobOutcome;
  report: DeliveryReport | undefined;
  reason: string | undefined;
}

/**
 * What a worker tells the parent, in the order it happened: a batch of lines taken (room for
 * another), outcomes to show, its progress, how many deliveries a "retry now" cut short, and its
 * summary when it has ended (with the message of the write error that stopped it, if one did).
 */
export type FromWorker =
  | { t: "took" }
  | { t: "outcomes"; outcomes: RelayedOutcome[] }
  | { t: "progress"; progress: WorkerProgress }
  | { t: "retried"; count: number }
  | { t: "done"; summary: RunSummary; writeError: string | undefined };

/** Where a worker thread posts to the parent (its parentPort). */
export interface ParentPort {
  postMessage(message: FromWorker): void;
  on(event: "message", listener: (message: ToWorker) => void): unknown;
}
