import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import type { Readable } from "node:stream";
import { AppendFile } from "../../adapters/append-file.js";
import { Journal } from "../../adapters/journal.js";
import { readLineBatches } from "../../adapters/line-reader.js";
import { openInputStream } from "../../adapters/read-input.js";
import { resolveDeliverySettings, type DeliveryFlags } from "../../config/resolve.js";
import { UsageError } from "../../core/errors.js";
import { prepareLine } from "../../core/message/prepare.js";
import { createDeliverer } from "../../engine/deliverer.js";
import { runDeliveries, runExitCode, type DeliveryJob, type RunSummary } from "../../engine/run-deliveries.js";
import { parseIntFlag } from "../flag-values.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { Output } from "../render.js";
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
  const stream = await openInputStream(file, io.cwd, io.stdin);
  const settings = await resolveDeliverySettings(flags, io.env, io.cwd, "one");
  const destination = settings.destinations[0];
  if (destination === undefined) throw new UsageError("no webhook URL to deliver to");
  const output = new Output(io, globals);
  const dryRun = flags.dryRun === true;
  const deadLetterPath = resolve(io.cwd, flags.deadLetter ?? (fromStdin ? "wh-failed.ndjson" : `${file}.failed.ndjson`));
  const journalPath = resolve(io.cwd, flags.journal ?? (fromStdin ? "wh-stdin.wh-journal" : `${file}.wh-journal`));
  const resume = flags.resume === true;
  let journal: Journal | undefined;
  if (!dryRun) {
    const opened = await Journal.open(journalPath, input, resume);
    journal = opened.journal;
    if (resume) output.log(opened.resumed === undefined ? `no journal at ${journalPath}: starting from the top` : `resuming: ${opened.resumed} lines already finished`);
  }
  // A fresh run's dead-letter file holds this run's failures only: an old one is removed.
  if (!dryRun && !resume) await rm(deadLetterPath, { force: true });
  const deadLetter = dryRun ? undefined : new AppendFile(deadLetterPath, "a");
  const deliverer = dryRun ? undefined : await createDeliverer(settings);
  // Reading waits for the next line, which may never come (an open stdin): Ctrl-C ends the input.
  const endInput = (): void => void stream.destroy();
  io.signal.addEventListener("abort", endInput, { once: true });
  let summary: RunSummary;
  try {
    summary = await runDeliveries(readJobs(stream), { ...options, ...renderRun(output, destination), deliverer, destination, journal, deadLetter, signal: io.signal });
  } finally {
    io.signal.removeEventListener("abort", endInput);
    stream.destroy();
    deadLetter?.close();
    await deliverer?.close();
  }
  const interrupted = io.signal.aborted;
  await journal?.close(!interrupted && summary.unfinished === 0);
  const deadLetters = deadLetter !== undefined && deadLetter.count > 0 ? deadLetterPath : undefined;
  const lines: string[] = [];
  if (deadLetters !== undefined) lines.push(`dead letters: ${deadLetters}`);
  if (interrupted) lines.push(output.out.yellow(`interrupted: resume with  wh replay ${file} --resume${flags.journal === undefined ? "" : ` --journal ${flags.journal}`}  (journal ${journalPath})`));
  printRunSummary(output, summary, { deadLetter: deadLetters ?? null, interrupted }, lines);
  return runExitCode(summary, interrupted);
}

async function* readJobs(stream: Readable): AsyncGenerator<DeliveryJob[]> {
  const stamps = { now: () => new Date(), newId: randomUUID };
  for await (const lines of readLineBatches(stream)) {
    const jobs: DeliveryJob[] = [];
    for (const line of lines) {
      if (line.text.trim() !== "") jobs.push({ number: line.number, original: line.text, prepared: prepareLine(line.text, stamps) });
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
