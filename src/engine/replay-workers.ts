import type { Worker } from "node:worker_threads";
import { emptyCounts } from "../adapters/journal.js";
import type { InputLine } from "../adapters/line-reader.js";
import { OutputWriteError } from "../core/errors.js";
import type { InFlight } from "./attempts-in-flight.js";
import type { WaitReason } from "./retry-waits.js";
import type { RunOptions, RunProgress, RunSummary } from "./run-deliveries.js";
import type { RunCounts } from "./run-recorder.js";
import type { FromWorker, ToWorker, WorkerProgress } from "./worker-protocol.js";

/** Batches of lines given to a worker and not yet taken by its run: enough to keep it busy while the parent reads. */
const UNTAKEN_BATCHES = 4;

export interface WorkersRunOptions extends Pick<RunOptions, "signal" | "stopInput" | "fractionRead" | "earlier" | "onOutcome" | "startProgress" | "onRunEnd"> {
  /** Which worker delivers a line (each user's lines one worker's), or undefined when the line is not this run's. */
  workerOf(line: InputLine): number | undefined;
}

/**
 * A replay on worker threads, the parent's side: this thread reads the lines and hands each to
 * its user's worker, in order, never more than UNTAKEN_BATCHES ahead of it; the workers prepare
 * and deliver them, and write how each ended to the run's one journal and one dead-letter file
 * (shared with them: see RunFiles.share), each as one run's recorder would. Stopping (Ctrl-C, a
 * worker stopped by a write error or by --max-failures) stops every worker as Ctrl-C stops a run.
 * The summary is the workers' added together.
 */
export class ReplayOnWorkers {
  private readonly startedAt = Date.now();
  private readonly untaken: number[];
  private readonly progress: (WorkerProgress | undefined)[];
  private readonly summaries: (RunSummary | undefined)[];
  private readonly retried: ((count: number) => void)[][];
  private roomMade: (() => void) | undefined;
  private writeError: OutputWriteError | undefined;
  private stopped = false;
  private dispatched = false;
  private failure: ((error: Error) => void) | undefined;

  private readonly workers: Worker[];

  constructor(
    count: number,
    /** Starts worker `index`. */
    start: (index: number) => Worker,
    private readonly options: WorkersRunOptions,
  ) {
    this.workers = Array.from({ length: count }, (_, index) => start(index));
    this.untaken = this.workers.map(() => 0);
    this.progress = this.workers.map(() => undefined);
    this.summaries = this.workers.map(() => undefined);
    this.retried = this.workers.map(() => []);
  }

  async run(lines: AsyncIterable<InputLine[]>): Promise<RunSummary> {
    const { options } = this;
    const onAbort = (): void => this.stop();
    options.signal.addEventListener("abort", onAbort, { once: true });
    const display = options.startProgress?.(() => this.liveProgress());
    try {
      const ended = this.whenAllDone();
      await Promise.race([this.dispatch(lines), ended]);
      await ended;
    } catch (error) {
      this.stop();
      throw error;
    } finally {
      options.signal.removeEventListener("abort", onAbort);
      display?.stop();
      options.onRunEnd?.();
      await Promise.all(this.workers.map((worker) => worker.terminate()));
    }
    return this.summary();
  }

  /** "Retry now" in every worker: how many deliveries waiting to retry it cut short. */
  async retryNow(): Promise<number> {
    const counts = this.workers.map((worker, index) =>
      this.summaries[index] !== undefined
        ? 0
        : new Promise<number>((resolve) => {
            (this.retried[index] as ((count: number) => void)[]).push(resolve);
            this.post(worker, { t: "retry-now" });
          }),
    );
    return (await Promise.all(counts)).reduce((sum, count) => sum + count, 0);
  }

  /** Hands each line to its worker, a batch at a time, waiting while a worker has UNTAKEN_BATCHES not taken. */
  private async dispatch(lines: AsyncIterable<InputLine[]>): Promise<void> {
    const { workers, options } = this;
    for await (const batch of lines) {
      const parts: InputLine[][] = workers.map(() => []);
      for (const line of batch) {
        // A blank line is no job (it keeps its number); a worker would only drop it.
        if (line.problem === undefined && line.text.trim() === "") continue;
        const index = options.workerOf(line);
        if (index === undefined) continue;
        (parts[index] as InputLine[]).push(line);
      }
      for (const [index, part] of parts.entries()) {
        if (part.length === 0) continue;
        while (!this.stopped && (this.untaken[index] as number) >= UNTAKEN_BATCHES) await new Promise<void>((resolve) => (this.roomMade = resolve));
        if (this.stopped) return;
        (this.untaken[index] as number) += 1;
        this.post(workers[index] as Worker, { t: "lines", lines: part });
      }
    }
    this.dispatched = true;
    for (const worker of workers) this.post(worker, { t: "end" });
  }

  /** Settles once every worker has sent its summary; rejects when one fails. */
  private whenAllDone(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.failure = reject;
      for (const [index, worker] of this.workers.entries()) {
        worker.on("message", (message: FromWorker) => {
          this.receive(index, message);
          if (this.summaries.every((summary) => summary !== undefined)) resolve();
        });
        worker.on("error", reject);
        worker.on("exit", (code) => {
          if (this.summaries[index] === undefined) reject(new Error(`replay worker ${index + 1} exited (code ${code}) before it finished`));
        });
      }
    });
  }

  private receive(index: number, message: FromWorker): void {
    switch (message.t) {
      case "took":
        (this.untaken[index] as number) -= 1;
        this.roomMade?.();
        this.roomMade = undefined;
        return;
      case "outcomes":
        for (const { job, outcome, report, reason } of message.outcomes) this.options.onOutcome?.(job, outcome, report, reason);
        return;
      case "progress":
        this.progress[index] = message.progress;
        return;
      case "retried":
        this.retried[index]?.shift()?.(message.count);
        return;
      case "done":
        this.summaries[index] = message.summary;
        if (message.writeError !== undefined) this.writeError ??= new OutputWriteError(message.writeError);
        for (const resolve of (this.retried[index] as ((count: number) => void)[]).splice(0)) resolve(0);
        // A worker that ended before its input did stopped on its own (--max-failures, a write error): so does the run.
        if (!this.dispatched || message.summary.stoppedByFailures !== undefined || message.writeError !== undefined) this.stop();
        return;
    }
  }

  /** Stops reading and every worker, as the first Ctrl-C stops a run: deliveries in flight may finish. */
  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.options.stopInput?.();
    this.roomMade?.();
    for (const [index, worker] of this.workers.entries()) if (this.summaries[index] === undefined) this.post(worker, { t: "stop" });
  }

  private post(worker: Worker, message: ToWorker): void {
    try {
      worker.postMessage(message);
    } catch (error) {
      this.failure?.(error as Error);
    }
  }

  /** The workers' figures added together, for the progress display. */
  private liveProgress(): RunProgress {
    const known = this.progress.filter((each): each is WorkerProgress => each !== undefined);
    const total = (pick: (each: WorkerProgress) => number): number => known.reduce((sum, each) => sum + pick(each), 0);
    const hanging = total((each) => each.hanging);
    const inFlight: InFlight = { count: total((each) => each.inFlight), olderThan: () => hanging, whenNone: () => () => undefined };
    return {
      counts: addCounts(known.map((each) => each.counts)),
      read: total((each) => each.read),
      total: undefined,
      fractionRead: this.options.fractionRead?.(),
      retrying: total((each) => each.retrying),
      waiting: mergeWaits(known.flatMap((each) => each.waiting)),
      inFlight,
      startedAt: this.startedAt,
    };
  }

  /** The run's summary: the workers' counts added together, over the whole run's time. */
  private summary(): RunSummary {
    const summaries = this.summaries.filter((each): each is RunSummary => each !== undefined);
    const counts = addCounts(summaries);
    const elapsedMs = Date.now() - this.startedAt;
    const ended = counts.delivered + counts.failed;
    return {
      ...counts,
      earlier: this.options.earlier ?? emptyCounts(),
      writeError: this.writeError,
      stoppedByFailures: summaries.find((each) => each.stoppedByFailures !== undefined)?.stoppedByFailures,
      elapsedMs,
      eventsPerSecond: elapsedMs > 0 ? (ended * 1_000) / elapsedMs : ended,
    };
  }
}

/** Counts added together, field by field. */
function addCounts(all: readonly RunCounts[]): RunCounts {
  const sum: RunCounts = { ...emptyCounts(), unfinished: 0, dryRun: 0, alreadyFinished: 0 };
  for (const counts of all) for (const key of Object.keys(sum) as (keyof RunCounts)[]) sum[key] += counts[key];
  return sum;
}

/** Each URL's waits once, with every worker's deliveries waiting on it. */
function mergeWaits(waits: readonly WaitReason[]): WaitReason[] {
  const byUrl = new Map<string, WaitReason>();
  for (const wait of waits) {
    const seen = byUrl.get(wait.url);
    byUrl.set(wait.url, seen === undefined ? { ...wait } : { ...seen, waiting: seen.waiting + wait.waiting });
  }
  return [...byUrl.values()];
}
