import { createHash } from "node:crypto";
import { stat } from "node:fs/promises";
import { relative, resolve } from "node:path";
import { readLineBatches } from "../../adapters/line-reader.js";
import { openInputStream } from "../../adapters/read-input.js";
import { type DeliverySettings, type Destination, resolveDeliverySettings } from "../../config/resolve.js";
import { shellQuote } from "../../core/shell-quote.js";
import { UsageError } from "../../core/errors.js";
import { shardOfLine } from "../../core/shard.js";
import type { InputLine } from "../../adapters/line-reader.js";
import { lineMessageId } from "../../core/message/line-message-id.js";
import { type MessageStamps, type PrepareResult, prepareLine } from "../../core/message/prepare.js";
import { routeMessage } from "../../core/destination/route.js";
import { createDeliverer } from "../../engine/deliverer.js";
import { destinationIdentity } from "../../engine/destination-identity.js";
import { requireNdjson } from "../../engine/ndjson-input.js";
import { linesToJobs } from "../../engine/line-jobs.js";
import type { FailureStop } from "../../engine/failure-streak.js";
import { RunFiles } from "../../engine/run-files.js";
import { runDeliveries, type RunOptions, type RunSummary } from "../../engine/run-deliveries.js";
import { ranToTheEnd, runExitCode } from "../../engine/run-outcome.js";
import type { FlagValues } from "../flags/spec.js";
import { replayFlags } from "../flags/tables.js";
import { type CliIo, commandClock, commandStamps, type GlobalFlags } from "../wiring/io.js";
import { noteUnsigned, Output } from "../output/render.js";
import { resumeCommand } from "../output/resume-hint.js";
import { replayOnWorkers, workerCount } from "../wiring/replay-on-workers.js";
import { listenForRetryNow } from "../wiring/retry-now.js";
import { describeJournal, printCompleteRun, printRunSummary, renderRun, warnFailureStop, withHint } from "../output/run-report.js";

export type ReplayFlags = FlagValues<typeof replayFlags>;

/** `wh replay <file|->`: streams NDJSON through the delivery engine, in order per user, losing nothing. */
export async function runReplay(
  file: string,
  flags: ReplayFlags,
  globals: GlobalFlags,
  io: CliIo,
  given: Record<string, unknown> = { ...flags },
): Promise<number> {
  const fromStdin = file === "-";
  const input = fromStdin ? "-" : resolve(io.cwd, file);
  // Before the input is opened (which names a missing file): a usage error leaves nothing open.
  const workers = workerCount(flags);
  // A regular file's size only: a pipe's (process substitution, a FIFO) says nothing of its length.
  const size = fromStdin
    ? undefined
    : await stat(input).then(
        (stats) => (stats.isFile() ? stats.size : undefined),
        () => undefined,
      );
  const settings = await resolveDeliverySettings(flags, io.env, io.cwd, "one", true);
  const destination = settings.destinations[0];
  if (destination === undefined) throw new UsageError("no webhook URL to deliver to");
  const output = new Output(io, globals);
  noteUnsigned(output, [destination]);
  const dryRun = flags.dryRun === true;
  const resume = flags.resume === true;
  const shard = flags.shard;
  const selection = lineSelection(flags);
  const { deadLetterPath, journalPath } = runFilePaths(file, flags, io.cwd, selection.chosen);
  const stream = await openInputStream(file, io.cwd, io);
  const inputName = fromStdin ? "standard input" : file;
  const resumeHint = (): string => `resume with  ${resumeCommand("replay", file, given, replayFlags)}`;
  let deadLetters: string | undefined;

  // Every file the run writes is opened (and the journal locked) before the first request.
  const files = dryRun
    ? undefined
    : await RunFiles.open({
        command: "replay",
        input,
        inputName,
        stdinFd: fromStdin ? io.stdin.fd : undefined,
        shard: shard === undefined ? undefined : `${shard.index}/${shard.count}`,
        messageIds: selection.chosen,
        destination: destinationIdentity(destination),
        journalPath,
        deadLetterPath,
        resume,
      });
  const journalSays = files !== undefined ? describeJournal(files.state, journalPath, resume) : undefined;
  if (journalSays !== undefined) output.log(journalSays);
  if (files?.state.kind === "complete") return await printCompleteRun(output, files, stream);

  const rendering = renderRun(output, destination, dryRun ? namesSkips(output) : undefined, flags.verbose === true);
  const read = { bytes: 0 };
  const lines = files?.lines(stream, read) ?? requireNdjson(readLineBatches(stream, { counter: read }), inputName);
  const common = {
    fractionRead: size === undefined || size === 0 ? undefined : () => read.bytes / size,
    ...rendering,
    journal: files?.journal,
    deadLetter: files?.deadLetter,
    earlier: files?.earlier,
    signal: io.signal,
    // Reading may wait for a line that never comes (an open stdin): stopping ends the input.
    stopInput: () => void stream.destroy(),
  };
  let summary: RunSummary | undefined;
  try {
    summary =
      workers > 1
        ? await replayOnWorkers(lines, workers, { flags, io, output, destination, selection, common, fromStdin, files })
        : await replayHere(lines, { flags, io, output, settings, destination, selection, common, fromStdin });
  } finally {
    stream.destroy();
    deadLetters = files?.finish(summary, ranToTheEnd(summary, io.signal.aborted));
  }
  // A resumed run does not read the lines an earlier part finished: it cannot tell what is missing.
  if (ranToTheEnd(summary, io.signal.aborted) && files?.state.kind !== "partial")
    for (const id of selection.unseen())
      output.warn(output.err.yellow(`--message-id ${JSON.stringify(id)}: no event of ${inputName} has it; nothing sent for it`));
  return reportReplay(output, summary, {
    deadLetters,
    notes: rendering.notes(),
    interrupted: io.signal.aborted,
    resumeHint,
    journalPath,
    cwd: io.cwd,
    workers,
  });
}

/** Runs the replay in this thread: today's one worker. */
async function replayHere(
  lines: AsyncIterable<InputLine[]>,
  {
    flags,
    io,
    output,
    settings,
    destination,
    selection,
    common,
    fromStdin,
  }: RunParts & { settings: DeliverySettings; destination: Destination; fromStdin: boolean },
): Promise<RunSummary> {
  const deliverer =
    flags.dryRun === true ? undefined : await createDeliverer(settings, { env: io.env, keepEveryBody: flags.verbose === true, clock: commandClock(io) });
  const retryNow = listenForRetryNow(io, output, fromStdin, deliverer);
  try {
    return await runDeliveries(linesToJobs(lines, linePreparer(destination, commandStamps(io), flags.exactBytes === true), undefined, selection.select), {
      ...common,
      concurrency: flags.concurrency,
      ordered: flags.ordered === "user",
      ratePerSecond: flags.rate,
      maxFailures: flags.maxFailures,
      batchSize: destination.batchSize,
      sender: deliverer?.to(destination),
      graceMs: io.timings?.graceMs,
    });
  } finally {
    retryNow.stop();
    await deliverer?.close();
  }
}

/** What both ways of running a replay are given. */
export interface RunParts {
  flags: ReplayFlags;
  io: CliIo;
  output: Output;
  selection: ReturnType<typeof lineSelection>;
  common: Pick<
    RunOptions,
    "fractionRead" | "onOutcome" | "onDryRun" | "startProgress" | "onDeliveryEvent" | "onRunEnd" | "journal" | "deadLetter" | "earlier" | "signal" | "stopInput"
  >;
}

/** A dry run says which lines go nowhere (matched no subscription, or turned off by their integrations), between the requests it shows. */
function namesSkips(output: Output): RunOptions["onOutcome"] {
  return (job, outcome, _report, reason) => {
    if (outcome === "skipped" && !output.json) output.result(`line ${job.number}: skipped (${reason ?? "not sent"})\n`);
  };
}

/** How replay prepares a line: shaped as the destination's mode sends it, then routed to its subscriptions when it has them. */
export function linePreparer(destination: Destination, stamps: MessageStamps, exactBytes: boolean): (text: string) => PrepareResult | Promise<PrepareResult> {
  const options = { mode: destination.mode, exactBytes, filter: destination.filter };
  const routed = destination.subscriptions;
  return routed === undefined ? (text) => prepareLine(text, stamps, options) : (text) => routeMessage(prepareLine(text, stamps, options), routed);
}

/**
 * The lines this run delivers: a shard's (--shard), the chosen events (--message-id, by the
 * messageId of the event each line holds), both, or all; and the chosen ids no line had.
 */
export function lineSelection(flags: ReplayFlags): {
  chosen: string[] | undefined;
  select: ((line: InputLine) => boolean) | undefined;
  unseen: () => string[];
} {
  const { shard } = flags;
  const chosen = flags.messageId === undefined ? undefined : [...new Set(flags.messageId)].sort();
  const seen = new Set<string>();
  const inShard = (line: InputLine): boolean => shard === undefined || shardOfLine(line.text, line.number, shard.count) === shard.index;
  const isChosen = (line: InputLine): boolean => {
    const id = lineMessageId(line.text);
    if (id === undefined || !chosen?.includes(id)) return false;
    seen.add(id);
    return true;
  };
  return {
    chosen,
    select: shard === undefined && chosen === undefined ? undefined : (line) => inShard(line) && (chosen === undefined || isChosen(line)),
    unseen: () => (chosen ?? []).filter((id) => !seen.has(id)),
  };
}

/**
 * Where a replay records: each shard, and each choice of --message-id, has its own journal and
 * dead letters by default, so n processes never share one and resending one event never replaces
 * the journal of an interrupted run of the whole file.
 */
function runFilePaths(
  file: string,
  flags: ReplayFlags,
  cwd: string,
  chosenIds: readonly string[] | undefined,
): { deadLetterPath: string; journalPath: string } {
  const { shard } = flags;
  const chosen = chosenIds === undefined ? "" : `.message-ids-${createHash("sha256").update(chosenIds.join("\n")).digest("hex").slice(0, 8)}`;
  const part = `${shard === undefined ? "" : `.shard-${shard.index}-of-${shard.count}`}${chosen}`;
  const fromStdin = file === "-";
  return {
    deadLetterPath: resolve(cwd, flags.deadLetter ?? (fromStdin ? `wh${part}-failed.ndjson` : `${file}${part}.failed.ndjson`)),
    journalPath: resolve(cwd, flags.journal ?? (fromStdin ? `wh-stdin${part}.wh-journal` : `${file}${part}.wh-journal`)),
  };
}

/**
 * How to go on after --max-failures stopped the run: fix the input (invalid lines); check the
 * URL's path (every URL answered 404, 405 or 410: a resume delivers to the same URLs, so another
 * one means a fresh run); or resume once the receiver answers, then send the failed ones again.
 */
function afterStop(
  stop: FailureStop,
  { deadLetters, resumeHint, journalPath, cwd }: { deadLetters: string | undefined; resumeHint: () => string; journalPath: string; cwd: string },
): string {
  const failedOnes = deadLetters === undefined ? "" : relative(cwd, deadLetters);
  if (stop.outcome === "invalid")
    return `fix the input and run it again without --resume${failedOnes === "" ? "" : ` (the invalid lines are in ${failedOnes})`}`;
  const redrive = failedOnes === "" ? "" : `, then wh replay ${shellQuote(failedOnes)} with the same --url sends the failed ones`;
  const resume = `${resumeHint()}  (journal ${journalPath})${redrive}`;
  if (stop.wrongPath)
    return `check the URL's path: with the right --url, run again without --resume (a resume delivers to the same URLs); if this path is right and will answer, ${resume}`;
  return `once the receiver answers, ${resumeHint()}  (journal ${journalPath}; to deliver to another --url, run again without --resume)${redrive}`;
}

/** The run's summary, and what to do next when it was interrupted or a file could not be written. */
function reportReplay(
  output: Output,
  summary: RunSummary,
  {
    deadLetters,
    notes,
    interrupted,
    resumeHint,
    journalPath,
    cwd,
    workers,
  }: { deadLetters: string | undefined; notes: string[]; interrupted: boolean; resumeHint: () => string; journalPath: string; cwd: string; workers: number },
): number {
  printRunSummary(output, summary, { deadLetter: deadLetters ?? null, interrupted, workers }, [
    ...(deadLetters === undefined ? [] : [`dead letters: ${deadLetters}`]),
    ...notes,
  ]);
  // On stderr, even with --quiet or a closed stdout: the one thing needed to go on.
  if (interrupted) output.warn(output.err.yellow(`interrupted: ${resumeHint()}  (journal ${journalPath})`));
  const stop = summary.stoppedByFailures;
  if (stop !== undefined && !interrupted) warnFailureStop(output, stop, afterStop(stop, { deadLetters, resumeHint, journalPath, cwd }));
  if (summary.writeError !== undefined)
    throw withHint(summary.writeError, `the run stopped; ${summary.unfinished} events were not finished; free space or fix the file, then ${resumeHint()}`);
  return runExitCode(summary, interrupted);
}
