import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { startReceiver, type Receiver } from "../../adapters/receiver.js";
import { loadConfig } from "../../config/load.js";
import { formatPath } from "../../core/message/schema.js";
import { resolveDeliverySettings, type DeliveryFlags, type Destination } from "../../config/resolve.js";
import { secretFromFlagsOrEnv } from "../../config/secret.js";
import { ConfigError, UsageError } from "../../core/errors.js";
import { parseIntFlag } from "../../core/int-flag.js";
import { parseQueueFlag } from "../../core/queue-url.js";
import { redactUrl, redactUrlText } from "../../core/redact.js";
import { parseSizeFlag } from "../../core/size-flag.js";
import { untrusted } from "../../core/untrusted.js";
import { startServe, type AcceptedRequest } from "../../engine/serve.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { listenFailure, parseHostFlag } from "../listen-address.js";
import { noteUnsigned, Output } from "../render.js";
import { renderRun } from "../run-report.js";
import { startServeInspector } from "../serve-inspector.js";
import { printRequest } from "./listen.js";

export interface ServeFlags extends DeliveryFlags {
  port?: string;
  host?: string;
  dataDir?: string;
  maxBody?: string;
  maxSpool?: string;
  concurrency?: string;
  dedupWindow?: string;
  verbose?: boolean;
  ui?: boolean;
  queue?: string;
  partitions?: string;
  role?: string;
  deadLetter?: string;
}

/** The port `wh serve` listens on unless told otherwise: fixed, so that an app's SDK settings stay put. */
export const DEFAULT_SERVE_PORT = 8787;
/** The write key printed for the embedded setup; with flat settings any key is accepted. */
const LOCAL_WRITE_KEY = "wh-local";

/**
 * `wh serve`: a local Segment-compatible tracking API. Apps point their Segment SDK at it; each
 * accepted event is spooled to disk, then delivered to the webhooks as the destination does.
 * With no webhooks configured, it delivers to an embedded `wh listen` and shows each event
 * arrive verified.
 */
export async function runServe(flags: ServeFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const port = parseIntFlag("--port", flags.port, DEFAULT_SERVE_PORT, 0, 65_535);
  const host = parseHostFlag(flags.host);
  const maxBodyBytes = parseSizeFlag("--max-body", flags.maxBody, 500_000);
  const maxSpoolBytes = parseSizeFlag("--max-spool", flags.maxSpool, 1_000_000_000);
  const concurrency = parseIntFlag("--concurrency", flags.concurrency, 32, 1, 10_000);
  const dedupWindow = parseIntFlag("--dedup-window", flags.dedupWindow, 100_000, 0, 10_000_000);
  const dataDir = resolve(io.cwd, flags.dataDir ?? ".wh/serve");
  const role = flags.role ?? "both";
  if (role !== "accept" && role !== "forward" && role !== "both") throw new UsageError(`--role ${JSON.stringify(role)}: expected accept, forward or both`);
  const partitions = flags.partitions === undefined ? undefined : parseIntFlag("--partitions", flags.partitions, 64, 1, 16_384);
  const output = new Output(io, globals);

  // No webhooks anywhere: deliver to an embedded receiver, as `wh demo` does.
  const { config } = await loadConfig(io.cwd, flags.config);
  const queueUrl = flags.queue ?? config.queue;
  const keptIn = queueUrl === undefined ? "the spool" : "the queue";
  if (flags.queue !== undefined) parseQueueFlag(flags.queue);
  if (queueUrl === undefined && (role !== "both" || partitions !== undefined || flags.deadLetter !== undefined)) {
    const flag = role !== "both" ? "--role" : partitions !== undefined ? "--partitions" : "--dead-letter";
    throw new UsageError(`${flag} needs --queue redis://…: with the local spool one process accepts and forwards, and its dead letters are in --data-dir`);
  }
  const embedded = (flags.url ?? []).length === 0 && config.webhooks === undefined && config.sources === undefined;
  let receiver: Receiver | undefined;
  let env = io.env;
  if (embedded) {
    const secret = (await secretFromFlagsOrEnv(flags, io.env))?.value ?? randomBytes(24).toString("base64url");
    receiver = await startReceiver({ secret, onRequest: (request) => printRequest(output, request) });
    flags = { ...flags, url: [receiver.url], secret: undefined, secretFile: undefined };
    env = { ...io.env, WH_SHARED_SECRET: secret };
  }
  try {
    const settings = await resolveDeliverySettings(flags, env, io.cwd, "all");
    const bySource = config.sources !== undefined && (flags.url ?? []).length === 0;
    if (bySource) requireWriteKeys(settings.destinations, settings.configPath);
    noteUnsigned(output, settings.destinations);
    const renderers = new Map(settings.destinations.map((destination) => [destination, renderRun(output, destination, undefined, flags.verbose === true)]));
    const page = flags.ui === true ? await startServeInspector(host, env, output).catch(listenFailure(0, host)) : undefined;
    const handle = await startServe({
      host,
      port,
      settings,
      bySource,
      dataDir,
      maxSpoolBytes,
      maxBodyBytes,
      concurrency,
      dedupWindow,
      env,
      signal: io.signal,
      queue: queueUrl === undefined ? undefined : { url: queueUrl, partitions },
      deadLetterPath: flags.deadLetter === undefined ? undefined : resolve(io.cwd, flags.deadLetter),
      role,
      // A warning can quote Redis's own error text.
      onWarning: quietRepeats((message) => output.warn(output.err.yellow(untrusted(message)))),
      onRequest: (request) => {
        printAccepted(output, request);
        page?.accepted(request);
      },
      onDeliveryEvent:
        flags.verbose === true || page !== undefined
          ? (job, event, destination) => {
              if (flags.verbose === true) renderers.get(destination)?.onDeliveryEvent?.(job, event);
              page?.attempt(job, event, destination);
            }
          : undefined,
      onOutcome: (job, outcome, report, reason, destination) => {
        renderers.get(destination)?.onOutcome?.(job, outcome, report, reason);
        page?.ended(job, outcome, reason);
        if (outcome === "delivered" && report !== undefined && !output.json && receiver === undefined) {
          output.log(`${output.err.green("→")} ${job.label} delivered to ${report.deliveredTo === undefined ? "?" : redactUrl(new URL(report.deliveredTo))} (${report.attempts} attempt${report.attempts === 1 ? "" : "s"}, ${Math.round(report.durationMs)} ms)`);
        }
      },
      onForwardingStopped: (destination, error) => {
        output.warn(output.err.red(`forwarding${destination.source === undefined ? "" : ` for ${destination.source}`} stopped: ${error.message}; accepted events stay in ${keptIn} for the next start`));
      },
    }).catch(listenFailure(port, host));
    output.record({ listening: handle.url, port: handle.port, dataDir: handle.dataDir, recovered: handle.recovered, embeddedReceiver: receiver?.url ?? null });
    const where = queueUrl === undefined ? `spool ${handle.dataDir}` : `queue ${redactUrlText(queueUrl)}, role ${role}`;
    output.log(`${role === "forward" ? "forwarding; /health and /metrics" : "tracking API"} on ${handle.url} (${where}${handle.recovered > 0 ? `; ${handle.recovered} events from an earlier run are being delivered` : ""})`);
    if (receiver !== undefined) {
      output.log(`delivering to an embedded receiver on ${receiver.url} that checks X-Signature (no webhooks configured)`);
      output.log(`point a Segment SDK at it: host ${handle.url}, write key ${LOCAL_WRITE_KEY} (any key is accepted), e.g.`);
      output.log(`  new Analytics({ writeKey: "${LOCAL_WRITE_KEY}", host: "${handle.url}" })   # @segment/analytics-node`);
    } else {
      for (const destination of settings.destinations) {
        const where = destination.targets.map((target) => redactUrl(target.url)).join(", ");
        output.log(`${destination.source === undefined ? "delivering" : `source ${destination.source}${destination.writeKey === undefined ? "" : ` (write key ${mask(destination.writeKey)})`}`} → ${where} (${destination.mode})`);
      }
    }
    if (page !== undefined) {
      page.origin = handle.url;
      output.log(`inspector: ${page.inspector.url}`);
      output.record({ inspector: page.inspector.url });
    }
    output.log(`press Ctrl-C to stop (accepted events not yet delivered stay in ${keptIn} for the next start)`);
    const summaries = await handle.done.finally(() => page?.inspector.close());
    const unfinished = summaries.reduce((sum, summary) => sum + summary.unfinished, 0);
    output.log(`stopped${unfinished > 0 ? `; ${unfinished} deliveries in flight were not finished and stay in ${keptIn}` : ""}`);
    return 0;
  } finally {
    await receiver?.close();
  }
}

/**
 * With sources, a request finds its source by write key: a source without one could never be
 * reached (wh send --source and a delete's fan-out need none, so the config allows it).
 */
function requireWriteKeys(destinations: readonly Destination[], configPath: string | undefined): void {
  const keyless = destinations.filter((destination) => destination.writeKey === undefined).map((destination) => formatPath(["sources", destination.source ?? ""]));
  if (keyless.length === 0) return;
  throw new ConfigError([`${keyless.join(", ")}: no writeKey: wh serve knows a source by its write key, so no request could reach ${keyless.length === 1 ? "it" : "them"}`], {
    source: configPath,
    hint: "give each source its writeKey, or serve one source with --source NAME",
  });
}

function printAccepted(output: Output, request: AcceptedRequest): void {
  const rejected = request.rejected.map(({ where, messageId, reason, error }) => ({ where, messageId: messageId ?? null, reason, error }));
  output.record({
    request: {
      path: request.path,
      status: request.status,
      source: request.source ?? null,
      accepted: request.accepted,
      duplicates: request.duplicates,
      ...(rejected.length === 0 ? {} : { rejected }),
      ...(request.code === undefined ? {} : { code: request.code }),
      ...(request.message === undefined ? {} : { message: request.message }),
    },
  });
  const c = output.err;
  const source = request.source === undefined ? "" : ` ${request.source}`;
  if (request.status !== 200) {
    output.log(`${c.red("←")} ${request.status} ${request.path}${source}: ${request.message}`);
    return;
  }
  const duplicates = request.duplicates === 0 ? "" : ` (${request.duplicates} duplicate${request.duplicates === 1 ? "" : "s"} dropped)`;
  const dropped = rejected.length === 0 ? "" : `, ${rejected.length} rejected`;
  output.log(`${c.cyan("←")} 200 ${request.path}${source}: ${request.accepted} event${request.accepted === 1 ? "" : "s"} accepted${dropped}${duplicates}`);
  // Dropped while the SDK was told 200: the app's developer learns of it here or nowhere.
  for (const { where, messageId, error } of rejected) output.warn(c.red(`✗ ${where}${messageId === null ? "" : ` (messageId ${messageId})`} rejected: ${error}`));
}

/** A write key is a credential of sorts: its first four characters are enough to tell sources apart. */
function mask(writeKey: string): string {
  return writeKey.length <= 4 ? "****" : `${writeKey.slice(0, 4)}…`;
}

/** The same warning at most once every 10 s (Redis away: every read and every tick fails alike). */
function quietRepeats(warn: (message: string) => void): (message: string) => void {
  const lastShown = new Map<string, number>();
  return (message) => {
    const now = Date.now();
    if (now - (lastShown.get(message) ?? 0) < 10_000) return;
    lastShown.set(message, now);
    if (lastShown.size > 100) lastShown.delete(lastShown.keys().next().value as string);
    warn(message);
  };
}
