import { resolve } from "node:path";
import { openInputStream } from "../../adapters/read-input.js";
import { loadConfig } from "../../config/load.js";
import { chooseSources } from "../../config/resolve.js";
import { createUndiciTransport } from "../../adapters/undici-transport.js";
import { systemClock } from "../../adapters/system-clock.js";
import type { Clock } from "../../core/clock.js";
import { Analytics } from "../../library/analytics/analytics.js";
import { isDebugEnabled } from "../../library/analytics/analytics-options.js";
import type { BatchResult } from "../../library/analytics/batch-sender.js";
import { describeOutcome } from "../../core/deliver.js";
import { formatDurationMs } from "../../core/duration.js";
import { UsageError } from "../../core/errors.js";
import { buildIngestMessage, type IngestType } from "../../core/message/ingest-message.js";
import { inexactNumberProblem } from "../../core/message/exact-numbers.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import type { MessageStamps, PrepareResult } from "../../core/message/prepare.js";
import { redactUrl, redactUrlText } from "../../core/redact.js";
import { analyticsSender } from "../../engine/analytics-sender.js";
import { RetryWaits } from "../../engine/retry-waits.js";
import { endpointIdentity } from "../../engine/destination-identity.js";
import { runDeliveries, type RunSummary } from "../../engine/run-deliveries.js";
import { ranToTheEnd, runExitCode } from "../../engine/run-outcome.js";
import { linesToJobs } from "../../engine/line-jobs.js";
import { RunFiles } from "../../engine/run-files.js";
import { VERSION } from "../../version.js";
import type { FlagValues } from "../flags/spec.js";
import { ingestFlags } from "../flags/tables.js";
import { type CliIo, commandStamps, type GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";
import { resumeCommand } from "../output/resume-hint.js";
import { listenForRetryNow } from "../wiring/retry-now.js";
import { FailureLines } from "../output/failure-lines.js";
import { describeJournal, printCompleteRun, warnFailureStop, withHint } from "../output/run-report.js";

type IngestFlags = FlagValues<typeof ingestFlags>;

/** Batches in flight at most, so that a large file does not queue itself into memory. */
const MAX_PENDING_BATCHES = 8;

/** How long one batch request may take (the client's own default). */
const BATCH_TIMEOUT_MS = 10_000;

/**
 * `wh ingest <file|->`: sends NDJSON messages to a Segment-compatible ingestion API in batches,
 * on the same runner as wh replay: a journal for --resume, dead letters for invalid lines and
 * failed batches (each message with its line number), Ctrl-C within the grace period.
 */
export async function runIngest(
  file: string,
  flags: IngestFlags,
  globals: GlobalFlags,
  io: CliIo,
  given: Record<string, unknown> = { ...flags },
): Promise<number> {
  const { flushAt, flushAfter: flushAfterMs } = flags;
  if (flushAfterMs < 1) throw new UsageError(`--flush-after ${JSON.stringify(given.flushAfter)}: expected a duration of at least 1ms`);
  const { writeKey, endpoint } = await resolveIngestSettings(flags, io);
  const output = new Output(io, globals);
  const fromStdin = file === "-";
  const inputName = fromStdin ? "standard input" : file;
  const journalPath = resolve(io.cwd, flags.journal ?? (fromStdin ? "wh-stdin.wh-ingest-journal" : `${file}.wh-ingest-journal`));
  const deadLetterPath = resolve(io.cwd, flags.deadLetter ?? (fromStdin ? "wh-ingest-failed.ndjson" : `${file}.ingest-failed.ndjson`));
  const stream = await openInputStream(file, io.cwd, io);
  const files = await RunFiles.open({
    command: "ingest",
    input: fromStdin ? "-" : resolve(io.cwd, file),
    inputName,
    stdinFd: fromStdin ? io.stdin.fd : undefined,
    destination: endpointIdentity(new URL(endpoint), writeKey),
    journalPath,
    deadLetterPath,
    resume: flags.resume === true,
  });
  const journalSays = describeJournal(files.state, journalPath, flags.resume === true);
  if (journalSays !== undefined) output.log(journalSays);
  if (files.state.kind === "complete") return await printCompleteRun(output, files, stream);

  const stopClient = new AbortController();
  // The client's batches wait their retries here, where "retry now" reaches them.
  const waits = new RetryWaits(systemClock);
  const { client, transport, batches } = ingestClient({ writeKey, endpoint, flushAt, flushAfterMs, signal: stopClient.signal, clock: waits.clock }, io, output);
  const sender = analyticsSender(client, () => stopClient.abort(), waits);
  const stamps = commandStamps(io);
  const retryNow = listenForRetryNow(io, output, fromStdin, sender);
  let summary: RunSummary | undefined;
  let deadLetters: string | undefined;
  // Invalid lines as replay's are: identical ones in a row are one line and a count.
  const invalidLines = new FailureLines(output);
  try {
    summary = await runDeliveries(
      linesToJobs(
        files.lines(stream),
        (text) => prepareIngestLine(text, stamps),
        () => sender.endOfInput(),
      ),
      {
        sender,
        concurrency: flushAt * MAX_PENDING_BATCHES,
        ordered: false,
        ratePerSecond: undefined,
        maxFailures: flags.maxFailures,
        journal: files.journal,
        deadLetter: files.deadLetter,
        earlier: files.earlier,
        signal: io.signal,
        graceMs: io.timings?.graceMs,
        stopInput: () => void stream.destroy(),
        onOutcome: (job, outcome, _report, reason) => {
          if (outcome !== "invalid") return;
          output.record({ line: job.number, outcome, reason });
          invalidLines.add(job, outcome, undefined, reason);
        },
        onRunEnd: () => invalidLines.end(),
      },
    );
  } finally {
    retryNow.stop();
    stream.destroy();
    await client.close();
    await transport.close();
    deadLetters = files.finish(summary, ranToTheEnd(summary, io.signal.aborted));
  }
  const resumeHint = (): string => `resume with  ${resumeCommand("ingest", file, given, ingestFlags)}`;
  return reportIngest(output, summary, { batches: batches.count, endpoint, deadLetters, interrupted: io.signal.aborted, resumeHint, journalPath });
}

/** The run's summary (a record and a line), and what to do next when it was interrupted or a file could not be written. */
function reportIngest(
  output: Output,
  summary: RunSummary,
  run: { batches: number; endpoint: string; deadLetters: string | undefined; interrupted: boolean; resumeHint: () => string; journalPath: string },
): number {
  const { batches, endpoint, deadLetters, interrupted, resumeHint, journalPath } = run;
  const { earlier } = summary;
  output.record({
    summary: true,
    sent: summary.delivered,
    failed: summary.failed,
    invalid: summary.invalid,
    batches: batches,
    unfinished: summary.unfinished,
    earlier,
    elapsedMs: summary.elapsedMs,
    endpoint: redactUrl(new URL(endpoint)),
    deadLetter: deadLetters ?? null,
    interrupted,
    stoppedByFailures: summary.stoppedByFailures ?? null,
  });
  const before = summary.alreadyFinished > 0 ? `; before: ${earlier.delivered} sent, ${earlier.failed} failed, ${earlier.invalid} invalid` : "";
  const unfinished = summary.unfinished > 0 ? `, ${summary.unfinished} not finished` : "";
  output.result(
    `${summary.delivered} sent in ${batches} batch${batches === 1 ? "" : "es"}, ${summary.failed} failed, ${summary.invalid} invalid${unfinished}, in ${formatDurationMs(summary.elapsedMs)}${before}`,
  );
  if (deadLetters !== undefined) output.result(`dead letters: ${deadLetters}`);
  if (interrupted) output.warn(output.err.yellow(`interrupted: ${resumeHint()}  (journal ${journalPath})`));
  const stop = summary.stoppedByFailures;
  if (stop !== undefined && !interrupted) {
    const kept = deadLetters ?? "the dead-letter file";
    const resume = `${resumeHint()}  (journal ${journalPath})`;
    warnFailureStop(
      output,
      stop,
      stop.outcome === "invalid"
        ? `fix the input and run it again without --resume (the invalid lines are in ${kept})`
        : stop.wrongPath
          ? `check --endpoint (wh posts to its /v1/batch): with the right one, run again without --resume (a resume sends to the same endpoint); if it is right and will answer, ${resume}`
          : `the failed messages are in ${kept}; once the endpoint answers, ${resume}`,
    );
  }
  if (summary.writeError !== undefined)
    throw withHint(summary.writeError, `the run stopped; ${summary.unfinished} messages were not finished; free space or fix the file, then ${resumeHint()}`);
  return runExitCode(summary, interrupted);
}

const LIBRARY = { name: "wh", version: VERSION };

/**
 * A line checked with the client's own rules as it is read; the body sent is the line. A line
 * may also be a whole batch of Segment's HTTP API, `{"batch": [...], "context": {...}}`: its
 * context is merged into each message's (the message's own keys win), and its messages go
 * together as one job.
 */
/**
 * The batching client for one ingest run, reporting each batch on the output. The client's library
 * defaults read the process (proxy variables, DEBUG, stderr): the CLI hands it the io's instead, so
 * a command behaves the same run in-process.
 */
function ingestClient(
  settings: { writeKey: string; endpoint: string; flushAt: number; flushAfterMs: number; signal: AbortSignal; clock: Clock },
  io: CliIo,
  output: Output,
): { client: Analytics; transport: ReturnType<typeof createUndiciTransport>; batches: { count: number } } {
  const transport = createUndiciTransport({ env: io.env, connectTimeoutMs: BATCH_TIMEOUT_MS });
  const client = new Analytics({
    ...settings,
    timeoutMs: BATCH_TIMEOUT_MS,
    transport,
    debug: isDebugEnabled(io.env.DEBUG),
    logger: (line) => io.stderr.write(`${line}\n`),
    // A line may be traffic another library recorded (a batch of the HTTP API): its name stays.
    keepOwnLibrary: true,
  });
  const batches = { count: 0 };
  const onBatch = (outcome: "sent" | "failed") => (result: BatchResult) => {
    batches.count += 1;
    const target = result.report.targets[0];
    output.record({
      batch: batches.count,
      outcome,
      messages: result.messages.length,
      bytes: result.bytes,
      attempts: result.report.attempts,
      last: describeOutcome(target?.last),
    });
    if (outcome === "failed")
      output.log(
        output.err.red(
          `batch of ${result.messages.length} failed: ${describeOutcome(target?.last)}${target?.reason === undefined ? "" : ` (${target.reason})`}`,
        ),
      );
  };
  client.on("success", onBatch("sent"));
  client.on("failure", onBatch("failed"));
  client.on("retry", ({ messages, attempt, delayMs }) =>
    output.log(output.err.yellow(`batch of ${messages.length}: attempt ${attempt} failed, retrying in ${formatDurationMs(delayMs)}`)),
  );
  return { client, transport, batches };
}

function prepareIngestLine(text: string, stamps: MessageStamps): PrepareResult {
  const parsed = parseJson(text);
  if (!parsed.ok) return { ok: false, kind: "invalid-json", error: parsed.error };
  // The client serialises each message again: a number it cannot hold exactly would change.
  const inexact = inexactNumberProblem(text);
  if (inexact !== undefined) return { ok: false, kind: "invalid-message", error: inexact };
  const record = parsed.value;
  if (!isJsonObject(record)) return { ok: false, kind: "invalid-message", error: "expected a JSON object" };
  if (!Array.isArray(record.batch)) return checkIngestMessage(record, text, stamps);
  const context = record.context;
  if (context !== undefined && !isJsonObject(context)) return { ok: false, kind: "invalid-message", error: "context: expected an object" };
  const messages: Record<string, unknown>[] = [];
  for (const [index, message] of record.batch.entries()) {
    if (!isJsonObject(message)) return { ok: false, kind: "invalid-message", error: `batch[${index}]: expected a JSON object` };
    const merged = context === undefined ? message : { ...message, context: { ...context, ...(message.context as object | undefined) } };
    const checked = checkIngestMessage(merged, "", stamps);
    if (!checked.ok) return { ...checked, error: `batch[${index}]: ${checked.error}` };
    messages.push(merged);
  }
  if (messages.length === 0) return { ok: false, kind: "invalid-message", error: "batch: no messages" };
  const first = messages[0] as { type?: string };
  return { ok: true, message: { type: first.type as IngestType, body: JSON.stringify(messages), userKey: undefined, messageId: undefined, enabled: true } };
}

function checkIngestMessage(value: Record<string, unknown>, text: string, stamps: MessageStamps): PrepareResult {
  const built = buildIngestMessage(value, stamps, LIBRARY, true);
  if (!built.ok) return { ok: false, kind: built.code === "E_MESSAGE_TOO_LARGE" ? "too-large" : "invalid-message", error: built.error };
  const messageId = value.messageId;
  return {
    ok: true,
    message: { type: built.type, body: text, userKey: undefined, messageId: typeof messageId === "string" ? messageId : undefined, enabled: true },
  };
}

/** The write key and endpoint: flags, then WH_WRITE_KEY / WH_ENDPOINT, then the config (the source's writeKey, then `ingest`). */
async function resolveIngestSettings(flags: IngestFlags, io: CliIo): Promise<{ writeKey: string; endpoint: string }> {
  let writeKey = flags.writeKey ?? nonEmpty(io.env.WH_WRITE_KEY);
  let endpoint = flags.endpoint ?? nonEmpty(io.env.WH_ENDPOINT);
  if (writeKey === undefined || endpoint === undefined) {
    const { config } = await loadConfig(io.cwd, flags.config);
    if (config.sources !== undefined && (flags.source !== undefined || Object.keys(config.sources).length === 1)) {
      writeKey ??= chooseSources(config, flags.source, "all")[0]?.writeKey;
    }
    writeKey ??= config.ingest?.writeKey;
    endpoint ??= config.ingest?.endpoint;
  }
  if (writeKey === undefined || writeKey === "")
    throw new UsageError("no write key", { hint: "pass --write-key, set WH_WRITE_KEY, or set ingest.writeKey in the config file" });
  if (endpoint === undefined)
    throw new UsageError("no ingestion endpoint", { hint: "pass --endpoint URL, set WH_ENDPOINT, or set ingest.endpoint in the config file" });
  try {
    const url = new URL(endpoint);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http");
  } catch {
    throw new UsageError(`--endpoint ${JSON.stringify(redactUrlText(endpoint))}: not an absolute http or https URL`);
  }
  return { writeKey, endpoint };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
