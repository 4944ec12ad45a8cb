import { readLines } from "../../adapters/line-reader.js";
import { openInputStream } from "../../adapters/read-input.js";
import { loadConfig } from "../../config/load.js";
import { chooseSources } from "../../config/resolve.js";
import { Analytics, AnalyticsError, type BatchResult } from "../../client/analytics.js";
import { describeOutcome } from "../../core/deliver.js";
import { formatDurationMs, parseDurationMs } from "../../core/duration.js";
import { UsageError } from "../../core/errors.js";
import { parseJson } from "../../core/message/parse-json.js";
import { redactUrl } from "../../core/redact.js";
import { parseIntFlag } from "../flag-values.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { Output } from "../render.js";

export interface IngestFlags {
  writeKey?: string;
  endpoint?: string;
  flushAt?: string;
  flushAfter?: string;
  config?: string;
  source?: string;
}

/** Batches in flight at most, so that a large file does not queue itself into memory. */
const MAX_PENDING_BATCHES = 8;

/** `wh ingest <file|->`: sends NDJSON messages to a Segment-compatible ingestion API in batches. */
export async function runIngest(file: string, flags: IngestFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const stream = await openInputStream(file, io.cwd, io.stdin);
  const flushAt = parseIntFlag("--flush-at", flags.flushAt, 20, 1, 100_000);
  const flushAfterMs = flags.flushAfter === undefined ? 5_000 : parseDurationMs(flags.flushAfter);
  if (flushAfterMs === undefined || flushAfterMs < 1) throw new UsageError(`--flush-after ${JSON.stringify(flags.flushAfter)}: expected a duration such as 500ms or 5s`);
  const { writeKey, endpoint } = await resolveIngestSettings(flags, io);
  const output = new Output(io, globals);
  const client = new Analytics({ writeKey, endpoint, flushAt, flushAfterMs });
  const counts = { sent: 0, failed: 0, invalid: 0, batches: 0 };
  const onBatch = (outcome: "sent" | "failed") => (result: BatchResult) => {
    counts.batches += 1;
    counts[outcome] += result.messages.length;
    const target = result.report.targets[0];
    output.record({ batch: counts.batches, outcome, messages: result.messages.length, bytes: result.bytes, attempts: result.report.attempts, last: describeOutcome(target?.last) });
    if (outcome === "failed") output.log(output.err.red(`batch of ${result.messages.length} failed: ${describeOutcome(target?.last)}${target?.reason === undefined ? "" : ` (${target.reason})`}`));
  };
  client.on("success", onBatch("sent"));
  client.on("failure", onBatch("failed"));
  client.on("retry", ({ messages, attempt, delayMs }) => output.log(output.err.yellow(`batch of ${messages.length}: attempt ${attempt} failed, retrying in ${formatDurationMs(delayMs)}`)));
  const startedAt = Date.now();
  try {
    for await (const line of readLines(stream)) {
      if (io.signal.aborted) break;
      if (line.text.trim() === "") continue;
      const reason = enqueueLine(client, line.text);
      if (reason !== undefined) {
        counts.invalid += 1;
        output.record({ line: line.number, outcome: "invalid", reason });
        output.log(output.err.red(`line ${line.number}: ${reason}`));
      }
      await client.belowPending(MAX_PENDING_BATCHES);
    }
  } finally {
    await client.close();
  }
  const elapsedMs = Date.now() - startedAt;
  output.record({ summary: true, ...counts, elapsedMs, endpoint: redactUrl(new URL(endpoint)) });
  output.result(`${counts.sent} sent in ${counts.batches} batch${counts.batches === 1 ? "" : "es"}, ${counts.failed} failed, ${counts.invalid} invalid, in ${formatDurationMs(elapsedMs)}`);
  if (io.signal.aborted) return 130;
  return counts.failed > 0 || counts.invalid > 0 ? 1 : 0;
}

/** Queues one NDJSON line; returns why it was refused, if it was. */
function enqueueLine(client: Analytics, text: string): string | undefined {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed.error;
  const value = parsed.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "expected a JSON object";
  const { type, ...fields } = value as Record<string, unknown>;
  try {
    client.enqueue(typeof type === "string" ? type : String(type), fields);
    return undefined;
  } catch (error) {
    if (error instanceof AnalyticsError) return error.message;
    throw error;
  }
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
  if (writeKey === undefined || writeKey === "") throw new UsageError("no write key", { hint: "pass --write-key, set WH_WRITE_KEY, or set ingest.writeKey in the config file" });
  if (endpoint === undefined) throw new UsageError("no ingestion endpoint", { hint: "pass --endpoint URL, set WH_ENDPOINT, or set ingest.endpoint in the config file" });
  try {
    const url = new URL(endpoint);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http");
  } catch {
    throw new UsageError(`--endpoint ${JSON.stringify(endpoint)}: not an absolute http or https URL`);
  }
  return { writeKey, endpoint };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
