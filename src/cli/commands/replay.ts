import { createHash, randomUUID, type Hash } from "node:crypto";
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import type { Readable } from "node:stream";
import { AppendFile } from "../../adapters/append-file.js";
import { emptyCounts, Journal, type JournalState, type OutcomeCounts } from "../../adapters/journal.js";
import { readLineBatches, type InputLine } from "../../adapters/line-reader.js";
import { openInputStream } from "../../adapters/read-input.js";
import { resolveDeliverySettings, type DeliveryFlags } from "../../config/resolve.js";
import { UsageError } from "../../core/errors.js";
import { prepareLine } from "../../core/message/prepare.js";
import { createDeliverer } from "../../engine/deliverer.js";
import { destinationIdentity } from "../../engine/destination-identity.js";
import { skipFinishedLines } from "../../engine/resume.js";
import { runDeliveries, runExitCode, type DeliveryJob, type RunSummary } from "../../engine/run-deliveries.js";
import { parseIntFlag } from "../flag-values.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { Output } from "../render.js";
import { resumeCommand } from "../resume-hint.js";
import { printRunSummary, renderRun } from "../run-report.js";

export interface ReplayFlags extends DeliveryFlags {
  concurrency?: string;
  ordered?: string;
  rate?: string;
  deadLetter?: string;
  journal?: string;
  resume?: boolean;
  dryRun?: boolean;
}

/** `wh replay <file|->`: streams NDJSON through the delivery engine, in order per user, losing nothing. */
export async function runReplay(file: string, flags: ReplayFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const options = parseReplayFlags(flags);
  const fromStdin = file === "-";
  const input = fromStdin ? "-" : resolve(io.cwd, file);
  const settings = await resolveDeliverySettings(flags, io.env, io.cwd, "one");
  const destination = settings.destinations[0];
  if (destination === undefined) throw new UsageError("no webhook URL to deliver to");
  const output = new Output(io, globals);
  const dryRun = flags.dryRun === true;
  const resume = flags.resume === true;
  const deadLetterPath = resolve(io.cwd, flags.deadLetter ?? (fromStdin ? "wh-failed.ndjson" : `${file}.failed.ndjson`));
  const journalPath = resolve(io.cwd, flags.journal ?? (fromStdin ? "wh-stdin.wh-journal" : `${file}.wh-journal`));
  const stream = await openInputStream(file, io.cwd, io.stdin);
  const inputName = fromStdin ? "standard input" : file;
  const resumeHint = (): string => `resume with  ${resumeCommand("replay", file, { ...flags })}`;

  // Every file the run writes is opened (and the journal locked) before the first request.
  let journal: Journal | undefined;
  let state: JournalState = { kind: "fresh" };
  let deadLetter: AppendFile | undefined;
  if (!dryRun) {
    ({ journal, state } = await Journal.open(journalPath, { command: "replay", input, destination: destinationIdentity(destination) }, resume));
    try {
      // A fresh run's dead-letter file holds this run's failures only; a resumed run's adds to it.
      deadLetter = AppendFile.open(deadLetterPath, "--dead-letter", state.kind === "partial" ? "append" : "truncate");
    } catch (error) {
      journal.close();
      throw error;
    }
    if (resume) output.log(describeResume(state, journalPath));
  }
  if (state.kind === "complete") return await reportComplete(stream, state, inputName, { output, journal, deadLetter, deadLetterPath });

  const digest = createHash("sha256");
  const read = { lines: 0 };
  let lines: AsyncIterable<InputLine[]> = readLineBatches(stream, { digest });
  if (state.kind === "partial") lines = skipFinishedLines(lines, state.finished, inputName);
  const earlier = state.kind === "partial" ? state.counts : undefined;
  const deliverer = dryRun ? undefined : await createDeliverer(settings);
  let summary: RunSummary;
  try {
    summary = await runDeliveries(readJobs(lines, read), {
      ...options,
      ...renderRun(output, destination),
      deliverer,
      destination,
      journal,
      deadLetter,
      earlier,
      signal: io.signal,
      // Reading may wait for a line that never comes (an open stdin): stopping ends the input.
      stopInput: () => void stream.destroy(),
    });
  } catch (error) {
    journal?.close();
    deadLetter?.close();
    throw error;
  } finally {
    stream.destroy();
    await deliverer?.close();
  }
  const interrupted = io.signal.aborted;
  const finished = !interrupted && summary.unfinished === 0 && summary.writeError === undefined;
  const notes = closeOutputs({ journal, deadLetter, deadLetterPath, freshDeadLetter: state.kind !== "partial", summary });
  if (finished && journal !== undefined) journal.complete({ lines: read.lines, digest: digestOf(digest), counts: totals(summary) });
  journal?.close();
  printRunSummary(output, summary, { deadLetter: notes.deadLetters ?? null, interrupted }, notes.deadLetters === undefined ? [] : [`dead letters: ${notes.deadLetters}`]);
  // On stderr, even with --quiet or a closed stdout: the one thing needed to go on.
  if (interrupted) output.warn(output.err.yellow(`interrupted: ${resumeHint()}  (journal ${journalPath})`));
  if (summary.writeError !== undefined) throw withHint(summary.writeError, `the run stopped; ${summary.unfinished} events were not finished; free space or fix the file, then ${resumeHint()}`);
  return runExitCode(summary, interrupted);
}

function describeResume(state: JournalState, journalPath: string): string {
  switch (state.kind) {
    case "fresh":
      return `no journal at ${journalPath}: starting from the top`;
    case "partial":
      return `resuming: ${state.finished.lines.length} lines already finished`;
    case "complete":
      return `the journal ${journalPath} records a complete run`;
  }
}

/** --resume of a run that ended: check the input is the same, then report what the run came to. */
async function reportComplete(
  stream: Readable,
  state: Extract<JournalState, { kind: "complete" }>,
  inputName: string,
  files: { output: Output; journal: Journal | undefined; deadLetter: AppendFile | undefined; deadLetterPath: string },
): Promise<number> {
  const { output } = files;
  try {
    const digest = createHash("sha256");
    let lines = 0;
    for await (const batch of readLineBatches(stream, { digest })) lines = batch[batch.length - 1]?.number ?? lines;
    if (digestOf(digest) !== state.digest || lines !== state.lines) {
      throw new UsageError(`--resume: ${inputName} is not the input of the complete run the journal records (it changed since); nothing was sent`, {
        hint: "run without --resume to send it all from the top",
      });
    }
  } finally {
    files.deadLetter?.close();
    files.journal?.close();
  }
  const { counts } = state;
  const summary: RunSummary = { ...emptyCounts(), unfinished: 0, dryRun: 0, alreadyFinished: state.lines, earlier: counts, writeError: undefined, elapsedMs: 0, eventsPerSecond: 0 };
  output.record({ complete: true, ...counts });
  output.result(`complete already: ${counts.delivered} delivered, ${counts.skipped} skipped by integrations, ${counts.invalid} invalid, ${counts.failed} failed; nothing was sent`);
  if (counts.invalid + counts.failed > 0) output.result(`dead letters: ${files.deadLetterPath}`);
  return runExitCode(summary, false);
}

function closeOutputs(files: { journal: Journal | undefined; deadLetter: AppendFile | undefined; deadLetterPath: string; freshDeadLetter: boolean; summary: RunSummary }): { deadLetters: string | undefined } {
  const { deadLetter } = files;
  if (deadLetter === undefined) return { deadLetters: undefined };
  try {
    deadLetter.close();
  } catch {
    // The write error is the summary's already.
  }
  const any = deadLetter.count > 0 || (!files.freshDeadLetter && files.summary.earlier.invalid + files.summary.earlier.failed > 0);
  // A fresh run that dead-lettered nothing leaves no empty file behind.
  if (!any && files.freshDeadLetter) rmSync(files.deadLetterPath, { force: true });
  return { deadLetters: any ? files.deadLetterPath : undefined };
}

function totals(summary: RunSummary): OutcomeCounts {
  const { earlier } = summary;
  return {
    delivered: earlier.delivered + summary.delivered,
    skipped: earlier.skipped + summary.skipped,
    invalid: earlier.invalid + summary.invalid,
    failed: earlier.failed + summary.failed,
  };
}

function digestOf(hash: Hash): string {
  return `sha256:${hash.digest("hex")}`;
}

function withHint<E extends Error & { hint: string | undefined }>(error: E, hint: string): E {
  (error as { hint: string | undefined }).hint = hint;
  return error;
}

async function* readJobs(batches: AsyncIterable<InputLine[]>, read: { lines: number }): AsyncGenerator<DeliveryJob[]> {
  const stamps = { now: () => new Date(), newId: randomUUID };
  for await (const lines of batches) {
    const jobs: DeliveryJob[] = [];
    for (const line of lines) {
      if (line.number > read.lines) read.lines = line.number;
      if (line.problem !== undefined) jobs.push({ number: line.number, original: line.text, prepared: { ok: false, kind: "unreadable", error: line.problem } });
      else if (line.text.trim() !== "") jobs.push({ number: line.number, original: line.text, prepared: prepareLine(line.text, stamps) });
    }
    yield jobs;
  }
}

export function parseReplayFlags(flags: ReplayFlags): { concurrency: number; ordered: boolean; ratePerSecond: number | undefined } {
  const concurrency = parseIntFlag("--concurrency", flags.concurrency, 32, 1, 10_000);
  const ordered = flags.ordered ?? "user";
  if (ordered !== "user" && ordered !== "none") throw new UsageError(`--ordered ${JSON.stringify(ordered)}: expected user or none`);
  let ratePerSecond: number | undefined;
  if (flags.rate !== undefined) {
    ratePerSecond = Number(flags.rate.replace(/\/s$/, ""));
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) throw new UsageError(`--rate ${JSON.stringify(flags.rate)}: expected events per second, such as 100 or 100/s`);
  }
  return { concurrency, ordered: ordered === "user", ratePerSecond };
}
