import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { OutcomeCounts } from "../../adapters/journal.js";
import type { InputLine } from "../../adapters/line-reader.js";
import type { Destination } from "../../config/resolve.js";
import { UsageError } from "../../core/errors.js";
import { shardOfLine } from "../../core/shard.js";
import { ReplayOnWorkers } from "../../engine/replay-workers.js";
import type { RunSummary } from "../../engine/run-deliveries.js";
import type { RunFiles, SharedRunFiles } from "../../engine/run-files.js";
import type { ReplayFlags, RunParts } from "../commands/replay.js";
import { REPLAY_WORKER_ARGUMENT } from "./replay-worker-argument.js";
import { listenForRetryNow } from "./retry-now.js";
import { hangingAfter } from "../output/run-progress.js";

/**
 * Runs the replay on `count` worker threads, each user's lines on one of them (split as --shard
 * splits, within this run's shard), each with its share of --concurrency; this thread reads the
 * input and hands them the journal and dead-letter file (`files`) to write to.
 */
export async function replayOnWorkers(
  lines: AsyncIterable<InputLine[]>,
  count: number,
  {
    flags,
    io,
    output,
    selection,
    common,
    destination,
    fromStdin,
    files,
  }: RunParts & { destination: Destination; fromStdin: boolean; files: RunFiles | undefined },
): Promise<RunSummary> {
  // The worker threads run the bundled CLI, main.cjs, beside this file once bundled (scripts/bundle-cli.mjs): a path in dist/cli-bundle/, not in src/.
  const entry = new URL("./main.cjs", import.meta.url);
  const { concurrency } = flags;
  const shards = flags.shard?.count ?? 1;
  const { select } = selection;
  const shared = files?.share();
  const start = (index: number): Worker =>
    startReplayWorker(entry, {
      flags,
      env: io.env,
      cwd: io.cwd,
      concurrency: Math.floor(concurrency / count) + (index < concurrency % count ? 1 : 0),
      earlier: index === 0 ? common.earlier : undefined,
      everyOutcome: output.json,
      hangingAfterMs: hangingAfter(output, destination.timeoutMs),
      graceMs: io.timings?.graceMs,
      files: shared,
    });
  const run = new ReplayOnWorkers(count, start, {
    ...common,
    // Of n·count shards, those of this run's shard (i, i+n, …): the shard's users split by the same hash.
    workerOf: (line) => (select !== undefined && !select(line) ? undefined : Math.floor(shardOfLine(line.text, line.number, shards * count) / shards)),
  });
  const retryNow = listenForRetryNow(io, output, fromStdin, run);
  try {
    return await run.run(lines);
  } finally {
    retryNow.stop();
  }
}

/** What a worker thread of `wh replay --workers` is started with. */
export interface ReplayWorkerData {
  /** The replay's flags: the worker resolves its destination from them as this thread did (functions do not cross threads). */
  flags: ReplayFlags;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** This worker's share of --concurrency. */
  concurrency: number;
  /** What the earlier parts of a resumed run came to: given to one worker, so the summaries added together count them once. */
  earlier: OutcomeCounts | undefined;
  /** Every outcome goes to the parent (--json), not only the failures. */
  everyOutcome: boolean;
  hangingAfterMs: number;
  graceMs: number | undefined;
  /** The run's journal and dead-letter file, which the worker writes to; none for a run that keeps none. */
  files: SharedRunFiles | undefined;
}

/**
 * A worker thread running this CLI (`entry`) as a replay worker (cli/wiring/replay-worker.ts). A thread,
 * not a child process: it dies with the process, so a `kill -9` of wh leaves no worker sending
 * events the journal can no longer record; and it starts without a second Node.
 */
function startReplayWorker(entry: URL, data: ReplayWorkerData): Worker {
  return new Worker(entry, { argv: [REPLAY_WORKER_ARGUMENT], workerData: data });
}

/**
 * How many worker threads: --workers, else one; `auto`, one per core. Not one per core by
 * default: on 2 cores shared with the receiver, two workers deliver 0.90× one's rate
 * (autocannon's second worker adds nothing there either), and where no core is saturated two
 * spend 1.37× the CPU per event of one (bench/replay-workers.js, docs/replay.md). One for what
 * shows each event as it goes (--dry-run, --verbose) or paces one stream of starts (--rate),
 * which refuse a number above one (auto takes one); and never more than --concurrency (each has
 * at least one delivery in flight).
 */
export function workerCount(flags: ReplayFlags): number {
  const alone = flags.dryRun === true ? "--dry-run" : flags.verbose === true ? "--verbose" : flags.rate !== undefined ? "--rate" : undefined;
  if (alone !== undefined) {
    if (typeof flags.workers === "number" && flags.workers > 1) {
      throw new UsageError(`--workers ${flags.workers} cannot go with ${alone}: a run with ${alone} runs on one worker`, {
        hint: `leave out --workers (or give --workers 1)`,
      });
    }
    return 1;
  }
  const wanted = flags.workers === "auto" ? availableParallelism() : (flags.workers ?? 1);
  return Math.min(wanted, flags.concurrency);
}
