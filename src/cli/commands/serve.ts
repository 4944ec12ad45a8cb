import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { startReceiver, type Receiver } from "../../adapters/listen-server.js";
import type { ReplicaWait } from "../../adapters/redis/queue.js";
import { loadConfig } from "../../config/load.js";
import type { WhConfig } from "../../config/schema.js";
import { parseDurationMs } from "../../core/duration.js";
import { formatPath } from "../../core/message/schema.js";
import { resolveDeliverySettings, type DeliverySettings, type Destination } from "../../config/resolve.js";
import { secretFromFlagsOrEnv } from "../../config/secret.js";
import { BoundedMap } from "../../core/bounded-map.js";
import { ConfigError, UsageError } from "../../core/errors.js";
import { redactUrl, redactUrlText } from "../../core/redact.js";
import { untrusted } from "../../core/untrusted.js";
import { startServe, type AcceptedRequest, type ServeHandle, type ServeOptions } from "../../engine/serve/start-serve.js";
import type { FlagValues } from "../flags/spec.js";
import type { serveFlags } from "../flags/server-tables.js";
import { type CliIo, commandClock, commandIds, type GlobalFlags } from "../wiring/io.js";
import { listenFailure } from "../wiring/listen-address.js";
import { noteUnsigned, Output } from "../output/render.js";
import { renderRun } from "../output/run-report.js";
import { listenForRetryNow, retryNowLine } from "../wiring/retry-now.js";
import { startServeInspector } from "../wiring/serve-inspector.js";
import { WaitingLines } from "../output/serve-waiting.js";
import { printRequest } from "./listen.js";

type ServeFlags = FlagValues<typeof serveFlags>;

/** Replicas to wait for before a 200 (flags first, then the config's queueWait), or undefined. */
function replicaWait(flags: ServeFlags, config: WhConfig): ReplicaWait | undefined {
  const replicas = flags.queueWaitReplicas ?? config.queueWait?.replicas;
  if (replicas === undefined) {
    if (flags.queueWaitTimeout !== undefined) throw new UsageError("--queue-wait-timeout needs --queue-wait-replicas (or queueWait in the config)");
    return undefined;
  }
  const configured = config.queueWait?.timeout;
  return { replicas, timeoutMs: flags.queueWaitTimeout ?? (configured === undefined ? undefined : parseDurationMs(configured)) ?? 2_000 };
}

/** The write key printed for the embedded setup; with flat settings any key is accepted. */
const LOCAL_WRITE_KEY = "wh-local";

/**
 * `wh serve`: a local Segment-compatible tracking API. Apps point their Segment SDK at it; each
 * accepted event is spooled to disk, then delivered to the webhooks as the destination does.
 * With no webhooks configured, it delivers to an embedded `wh listen` and shows each event
 * arrive verified.
 */
export async function runServe(flags: ServeFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const { port, host, role = "both", partitions } = flags;
  io.tuneForServer?.();
  const output = new Output(io, globals);
  const { config } = await loadConfig(io.cwd, flags.config);
  const queueUrl = flags.queue ?? config.queue;
  const wait = replicaWait(flags, config);
  if (queueUrl === undefined && (role !== "both" || partitions !== undefined || flags.deadLetter !== undefined || wait !== undefined)) {
    const flag =
      role !== "both" ? "--role" : partitions !== undefined ? "--partitions" : flags.deadLetter !== undefined ? "--dead-letter" : "--queue-wait-replicas";
    throw new UsageError(`${flag} needs --queue redis://…: with the local spool one process accepts and forwards, and its dead letters are in --data-dir`);
  }
  // No webhooks anywhere: deliver to an embedded receiver, as `wh demo` does.
  const embedded =
    (flags.url ?? []).length === 0 &&
    config.webhooks === undefined &&
    config.sources === undefined &&
    config.subscriptions === undefined &&
    flags.subscriptions === undefined;
  let receiver: Receiver | undefined;
  let env = io.env;
  if (embedded) {
    // The embedded receiver checks what the deliveries sign: a made-up secret fits the scheme.
    const scheme = flags.scheme ?? config.scheme;
    const madeUp = scheme === "standard" ? `whsec_${randomBytes(24).toString("base64")}` : randomBytes(24).toString("base64url");
    const secret = (await secretFromFlagsOrEnv(flags, io.env, io.cwd))?.value ?? madeUp;
    receiver = await startReceiver({ secret, scheme, onRequest: (request) => printRequest(output, request) });
    flags = { ...flags, url: [receiver.url], secret: undefined, secretFile: undefined };
    env = { ...io.env, WH_SHARED_SECRET: secret };
  }
  try {
    const settings = await resolveDeliverySettings(flags, env, io.cwd, "all", true);
    const bySource = config.sources !== undefined && (flags.url ?? []).length === 0;
    if (bySource) requireWriteKeys(settings.destinations, settings.configPath);
    noteUnsigned(output, settings.destinations);
    const retryFromPage = pageRetry(output);
    const page = flags.ui === true ? await startServeInspector(host, env, output, { retryNow: retryFromPage.retry }).catch(listenFailure(0, host)) : undefined;
    const waitingLines = new WaitingLines(output, commandClock(io));
    const run: ServeRun = { flags, output, settings, queueUrl, receiver, page, waitingLines };
    const handle = await startServe({
      host,
      port,
      allowedHosts: flags.allowHost ?? config.allowHosts,
      settings,
      bySource,
      dataDir: resolve(io.cwd, flags.dataDir),
      maxSpoolBytes: flags.maxSpool,
      maxBodyBytes: flags.maxBody,
      concurrency: flags.concurrency,
      dedupWindow: flags.dedupWindow,
      env,
      signal: io.signal,
      graceMs: io.timings?.graceMs,
      clock: commandClock(io),
      newId: commandIds(io),
      queue: queueUrl === undefined ? undefined : { url: queueUrl, partitions, wait },
      deadLetterPath: flags.deadLetter === undefined ? undefined : resolve(io.cwd, flags.deadLetter),
      role,
      ...serveCallbacks(run),
    }).catch(listenFailure(port, host));
    retryFromPage.connect(handle);
    const retryNow = listenForRetryNow(io, output, false, handle);
    if (flags.verbose !== true) waitingLines.start(handle);
    printStarted(run, handle);
    const summaries = await handle.done.finally(() => {
      retryNow.stop();
      waitingLines.stop();
      return page?.inspector.close();
    });
    const unfinished = summaries.reduce((sum, summary) => sum + summary.unfinished, 0);
    output.log(`stopped${unfinished > 0 ? `; ${unfinished} deliveries in flight were not finished and stay in ${keptIn(queueUrl)}` : ""}`);
    return 0;
  } finally {
    await receiver?.close();
  }
}

/** What one `wh serve` run shows its progress with. */
interface ServeRun {
  flags: ServeFlags;
  output: Output;
  settings: DeliverySettings;
  queueUrl: string | undefined;
  /** The embedded receiver, when no webhooks are configured. */
  receiver: Receiver | undefined;
  page: Awaited<ReturnType<typeof startServeInspector>> | undefined;
  waitingLines: WaitingLines;
}

/**
 * The inspector's "retry now" button: the page starts before the engine it retries, so the button
 * reaches the engine once there is one, with the same line as SIGUSR1 and the r key.
 */
function pageRetry(output: Output): { retry(): number; connect(deliveries: { retryNow(): number }): void } {
  let deliveries: { retryNow(): number } | undefined;
  return {
    retry() {
      const retried = deliveries?.retryNow() ?? 0;
      output.log(`${retryNowLine(retried)} (the inspector's button)`);
      return retried;
    },
    connect(engine) {
      deliveries = engine;
    },
  };
}

function keptIn(queueUrl: string | undefined): string {
  return queueUrl === undefined ? "the spool" : "the queue";
}

/** How serve's events reach the terminal, the --json records and the inspector page. */
function serveCallbacks({
  flags,
  output,
  settings,
  queueUrl,
  receiver,
  page,
  waitingLines,
}: ServeRun): Pick<ServeOptions, "onWarning" | "onRequest" | "onDeliveryEvent" | "onOutcome" | "onForwardingStopped" | "onRetried"> {
  const verbose = flags.verbose === true;
  const renderers = new Map(settings.destinations.map((destination) => [destination, renderRun(output, destination, undefined, verbose)]));
  return {
    // A warning can quote Redis's own error text.
    onWarning: quietRepeats((message) => output.warn(output.err.yellow(untrusted(message)))),
    onRequest: (request) => {
      printAccepted(output, request);
      page?.accepted(request);
    },
    onDeliveryEvent:
      verbose || page !== undefined
        ? (job, event, destination, request) => {
            if (verbose) renderers.get(destination)?.onDeliveryEvent?.(job, event);
            page?.attempt(job, event, destination, request);
          }
        : undefined,
    onOutcome: (job, outcome, report, reason, destination) => {
      renderers.get(destination)?.onOutcome?.(job, outcome, report, reason);
      page?.ended(job, outcome, reason, report);
      if (outcome === "delivered" && report?.deliveredTo !== undefined) waitingLines.delivered(report.deliveredTo);
      if (outcome === "delivered" && report !== undefined && !output.json && receiver === undefined) {
        const routes = job.prepared.ok ? job.prepared.message.routes : undefined;
        // With subscriptions the report is the last request's: the line names every subscription instead.
        const where =
          routes !== undefined
            ? routes.map((route) => `subscription ${JSON.stringify(route.subscription)}`).join(", ")
            : `${report.deliveredTo === undefined ? "?" : redactUrl(new URL(report.deliveredTo))} (${report.attempts} attempt${report.attempts === 1 ? "" : "s"}, ${Math.round(report.durationMs)} ms)`;
        output.log(`${output.err.green("→")} ${job.label} delivered to ${where}`);
      }
      // An accepted event that is never delivered (a filter dropped it, its integrations turn the
      // destination off) says so, or the terminal would leave it unaccounted for; --verbose's run lines say it already.
      if (outcome === "skipped" && !output.json && !verbose) output.log(`${output.err.yellow("→")} ${job.label} skipped: ${untrusted(String(reason))}`);
    },
    onRetried: (retried) => output.log(`POST /retry: ${retryNowLine(retried)}`),
    onForwardingStopped: (destination, error) => {
      output.warn(
        output.err.red(
          `forwarding${destination.source === undefined ? "" : ` for ${destination.source}`} stopped: ${error.message}; accepted events stay in ${keptIn(queueUrl)} for the next start`,
        ),
      );
    },
  };
}

/** Where serve listens, what it delivers to, and how to stop it. */
function printStarted({ flags, output, settings, queueUrl, receiver, page }: ServeRun, handle: ServeHandle): void {
  const role = flags.role ?? "both";
  output.record({ listening: handle.url, port: handle.port, dataDir: handle.dataDir, recovered: handle.recovered, embeddedReceiver: receiver?.url ?? null });
  const where = queueUrl === undefined ? `spool ${handle.dataDir}` : `queue ${redactUrlText(queueUrl)}, role ${role}`;
  output.log(
    `${role === "forward" ? "forwarding; /health and /metrics" : "tracking API"} on ${handle.url} (${where}${handle.recovered > 0 ? `; ${handle.recovered} events from an earlier run are being delivered` : ""})`,
  );
  if (receiver !== undefined) {
    output.log(`delivering to an embedded receiver on ${receiver.url} that checks X-Signature (no webhooks configured)`);
    output.log(`point a Segment SDK at it: host ${handle.url}, write key ${LOCAL_WRITE_KEY} (any key is accepted), e.g.`);
    output.log(`  new Analytics({ writeKey: "${LOCAL_WRITE_KEY}", host: "${handle.url}" })   # @segment/analytics-node`);
  } else {
    for (const destination of settings.destinations) {
      const where = deliveredTo(destination);
      output.log(
        `${destination.source === undefined ? "delivering" : `source ${destination.source}${destination.writeKey === undefined ? "" : ` (write key ${mask(destination.writeKey)})`}`} → ${where} (${destination.mode})`,
      );
    }
  }
  if (page !== undefined) {
    page.origin = handle.url;
    output.log(`inspector: ${page.inspector.url}`);
    output.record({ inspector: page.inspector.url });
  }
  output.log(`press ${output.keyHints("Ctrl-C to stop")} (accepted events not yet delivered stay in ${keptIn(queueUrl)} for the next start)`);
}

/** A destination's URLs, or its subscriptions: each name with its trigger. */
function deliveredTo(destination: Destination): string {
  const routed = destination.subscriptions?.subscriptions;
  if (routed === undefined) return destination.targets.map((target) => redactUrl(target.url)).join(", ");
  return routed.map((each) => `subscription ${JSON.stringify(each.name)} (${each.enabled ? each.trigger : "disabled"})`).join(", ");
}

/**
 * With sources, a request finds its source by write key: a source without one could never be
 * reached (wh send --source and a delete's fan-out need none, so the config allows it).
 */
function requireWriteKeys(destinations: readonly Destination[], configPath: string | undefined): void {
  const keyless = destinations
    .filter((destination) => destination.writeKey === undefined)
    .map((destination) => formatPath(["sources", destination.source ?? ""]));
  if (keyless.length === 0) return;
  throw new ConfigError(
    [`${keyless.join(", ")}: no writeKey: wh serve knows a source by its write key, so no request could reach ${keyless.length === 1 ? "it" : "them"}`],
    {
      source: configPath,
      hint: "give each source its writeKey, or serve one source with --source NAME",
    },
  );
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
  for (const { where, messageId, error } of rejected)
    output.warn(c.red(`✗ ${where}${messageId === null ? "" : ` (messageId ${messageId})`} rejected: ${error}`));
}

/** A write key is a credential of sorts: its first four characters are enough to tell sources apart. */
function mask(writeKey: string): string {
  return writeKey.length <= 4 ? "****" : `${writeKey.slice(0, 4)}…`;
}

/** The same warning at most once every 10 s (Redis away: every read and every tick fails alike). */
function quietRepeats(warn: (message: string) => void): (message: string) => void {
  const lastShown = new BoundedMap<string, number>(100);
  return (message) => {
    const now = Date.now();
    if (now - (lastShown.get(message) ?? 0) < 10_000) return;
    lastShown.set(message, now);
    warn(message);
  };
}
