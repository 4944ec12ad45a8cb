import type { Destination } from "../../config/resolve.js";
import type { DeliveryReport } from "../../core/deliver.js";
import { deliveryRecord } from "../../core/delivery-record.js";
import { formatDurationMs } from "../../core/duration.js";
import { describeSkipped } from "../../core/message/skip.js";
import { untrusted } from "../../core/untrusted.js";
import type { Readable } from "node:stream";
import type { JournalState, OutcomeCounts } from "../../adapters/journal.js";
import { emptyCounts } from "../../adapters/journal.js";
import type { RunOptions, RunSummary } from "../../engine/run-deliveries.js";
import { runExitCode, wholeRunCounts } from "../../engine/run-outcome.js";
import { type DeliveryJob, type JobOutcome, skipKindOf } from "../../engine/delivery-job.js";
import type { FailureStop } from "../../engine/failure-streak.js";
import type { RunFiles } from "../../engine/run-files.js";
import { printDryRun, renderVerboseEvent } from "./dry-run.js";
import { FailureLines, jobLine } from "./failure-lines.js";
import type { Output } from "./render.js";
import { startProgress } from "./run-progress.js";

/**
 * How a command shows a run: a log line for each invalid or failed job, grouped when identical
 * (FailureLines; one line each with --verbose), one --json record per job, the dry-run
 * requests, and the progress display. `also` runs first for each outcome (a sync records what was
 * delivered).
 */
export function renderRun(
  output: Output,
  destination: Destination,
  also?: RunOptions["onOutcome"],
  verbose = false,
): Pick<RunOptions, "onOutcome" | "onDryRun" | "startProgress" | "onDeliveryEvent" | "onRunEnd"> & { notes(): string[] } {
  // --verbose counts the input fields the classic shape did not carry, for the summary.
  const notCarried = new Map<string, number>();
  const failures = new FailureLines(output);
  return {
    notes: () =>
      notCarried.size === 0
        ? []
        : [
            `not carried by the classic shape (use --mode actions to send whole events): ${[...notCarried].map(([field, count]) => `${field} (${count})`).join(", ")}`,
          ],
    onDeliveryEvent: verbose
      ? (job, event) => renderVerboseEvent(output, job.label ?? `line ${job.number}`, job.prepared.ok ? job.prepared.message.body : "", destination, event)
      : undefined,
    onOutcome: (job, outcome, report, reason) => {
      also?.(job, outcome, report, reason);
      if (verbose && job.prepared.ok) for (const field of job.prepared.message.dropped ?? []) notCarried.set(field, (notCarried.get(field) ?? 0) + 1);
      renderOutcome(output, verbose ? undefined : failures, job, outcome, report, reason);
    },
    onDryRun: (job, request) => printDryRun(output, request, destination, { line: job.number }),
    startProgress: (progress) => startProgress(output, progress, destination.timeoutMs),
    onRunEnd: () => failures.end(),
  };
}

/** One job's end: its --json record, and its log line (failures grouped, unless `failures` is absent). */
function renderOutcome(
  output: Output,
  failures: FailureLines | undefined,
  job: DeliveryJob,
  outcome: JobOutcome,
  report: DeliveryReport | undefined,
  reason: string | undefined,
): void {
  if (outcome === "interrupted") return;
  if (outcome === "invalid" || outcome === "failed") {
    if (failures !== undefined) failures.add(job, outcome, report, reason);
    else output.log(jobLine(output, job, outcome, reason));
  } else if (outcome === "skipped" && failures === undefined) output.log(`${job.label ?? `line ${job.number}`}: skipped: ${untrusted(String(reason))}`);
  if (!output.json || outcome === "dry-run") return;
  const message = job.prepared.ok ? job.prepared.message : undefined;
  output.record({
    ...(job.origin ?? { line: job.number }),
    outcome,
    ...(outcome === "skipped" ? { skip: skipKindOf(job) ?? "integrations" } : {}),
    ...(message === undefined ? {} : { type: message.type, messageId: message.messageId ?? null }),
    ...(reason === undefined ? {} : { reason }),
    ...(report === undefined ? {} : deliveryRecord(report)),
  });
}

/** The closing lines of a run: counts, time and rate, then any notes (dead letters, how to resume). */
export function printRunSummary(output: Output, summary: RunSummary, notes: Record<string, unknown>, lines: string[]): void {
  output.record({ summary: true, ...summary, stoppedByFailures: summary.stoppedByFailures ?? null, ...notes });
  const c = output.out;
  const parts = [
    c.green(`${summary.delivered} delivered`),
    ...describeSkipped(summary),
    summary.invalid > 0 ? c.red(`${summary.invalid} invalid`) : "0 invalid",
    summary.failed > 0 ? c.red(`${summary.failed} failed`) : "0 failed",
  ];
  if (summary.dryRun > 0) parts.unshift(`${summary.dryRun} shown (dry run, nothing sent)`);
  if (summary.alreadyFinished > 0) parts.push(`${summary.alreadyFinished} already finished before`);
  if (summary.unfinished > 0) parts.push(c.yellow(`${summary.unfinished} not finished`));
  output.result(`${parts.join(", ")} in ${formatDurationMs(summary.elapsedMs)} (${Math.round(summary.eventsPerSecond)} events/s)`);
  // A resumed run's exit code counts its earlier parts: so does what it says.
  if (summary.alreadyFinished > 0) output.result(`the whole run: ${describeCounts(wholeRunCounts(summary))}`);
  for (const line of lines) output.result(line);
}

/** Why a run stopped on its own (--max-failures), on stderr even with --quiet, and `next`: how to go on. */
export function warnFailureStop(output: Output, stop: FailureStop, next: string): void {
  // An invalid line's reason may quote the line.
  const why =
    stop.outcome === "invalid"
      ? `stopped after ${stop.failures} identical invalid lines in a row (from line ${stop.firstLine}: ${untrusted(stop.reason)}): the rest was not read`
      : `stopped after ${stop.failures} identical failures in a row (${stop.reason}): the rest was not sent`;
  output.warn(output.err.yellow(`${why}; ${next}`));
}

function describeCounts(counts: OutcomeCounts): string {
  return [`${counts.delivered} delivered`, ...describeSkipped(counts), `${counts.invalid} invalid`, `${counts.failed} failed`].join(", ");
}

/**
 * What --resume found in the journal, for the log; without --resume, that a journal of an earlier
 * run of this input is replaced and everything sent again (said before anything is sent).
 */
export function describeJournal(state: JournalState, journalPath: string, resume: boolean): string | undefined {
  switch (state.kind) {
    case "fresh":
      if (state.replaced === "complete")
        return `the journal ${journalPath} records a complete run of this input: sending all of it again (--resume would send nothing; Ctrl-C stops)`;
      if (state.replaced === "unfinished")
        return `the journal ${journalPath} records an unfinished run of this input: starting over from the top (Ctrl-C, then --resume, goes on from where it stopped instead)`;
      return resume ? `no journal at ${journalPath}: starting from the top` : undefined;
    case "partial":
      return `resuming: ${state.finished.lines.length} lines already finished`;
    case "complete":
      return `the journal ${journalPath} records a complete run`;
  }
}

/**
 * --resume of a run that ended: checks the input is unchanged, then says what the run came to,
 * its exit code and where its failure records are. Exits 0 whatever that was: there is nothing
 * left to do, and a supervisor that restarts on a non-zero exit (Kubernetes' OnFailure) stops.
 */
export async function printCompleteRun(output: Output, files: RunFiles, stream: Readable): Promise<number> {
  const { state } = files;
  if (state.kind !== "complete") throw new Error("printCompleteRun needs a complete journal");
  let deadLetters: string | undefined;
  try {
    await files.checkUnchanged(stream);
  } finally {
    stream.destroy();
    deadLetters = files.finish(undefined, false);
  }
  const { counts } = state;
  const summary: RunSummary = {
    ...emptyCounts(),
    unfinished: 0,
    dryRun: 0,
    alreadyFinished: state.lines,
    earlier: counts,
    writeError: undefined,
    elapsedMs: 0,
    eventsPerSecond: 0,
  };
  const runExit = runExitCode(summary, false);
  output.record({ summary: true, complete: true, ...counts, deadLetter: deadLetters ?? null, runExitCode: runExit });
  output.result(`complete already: ${describeCounts(counts)}; nothing was sent`);
  if (deadLetters !== undefined) output.result(`dead letters: ${deadLetters}`);
  if (runExit !== 0) {
    output.result(
      `the run ended with exit ${runExit} (${counts.invalid} invalid, ${counts.failed} failed); nothing is left to resume, so this exits 0 (run without --resume to send it all again)`,
    );
  }
  return 0;
}

/** The same error, with a hint saying how to go on. */
export function withHint<E extends Error & { hint: string | undefined }>(error: E, hint: string): E {
  (error as { hint: string | undefined }).hint = hint;
  return error;
}
