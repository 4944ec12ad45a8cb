import * as z from "zod/mini";
import { systemClock } from "../../adapters/system-clock.js";
import { createUndiciTransport, type ClosableTransport } from "../../adapters/undici-transport.js";
import type { Clock } from "../../core/clock.js";
import type { HttpTransport } from "../../core/deliver.js";
import { UsageError } from "../../core/errors.js";
import { kindOf } from "../../core/arguments.js";
import { aBoolean, aClock, aFunction, anAbortSignal, millisecondsOf, numberOf, parseSettings } from "../settings.js";

export type AnalyticsErrorCode = "E_INVALID_MESSAGE" | "E_MESSAGE_TOO_LARGE" | "E_CLOSED" | "E_NO_ENDPOINT" | "E_NO_WRITE_KEY" | "E_INVALID_OPTION";

/**
 * Thrown by the client's calls; `code` says which rule was broken. Each is a mistake of the
 * calling code, so a UsageError, as every library entry point's refusal is.
 */
export class AnalyticsError extends UsageError {
  declare readonly code: AnalyticsErrorCode;

  constructor(code: AnalyticsErrorCode, message: string) {
    super(message, {}, code);
  }
}

export interface AnalyticsOptions {
  /** The source's write key: sent as the HTTP basic-auth user. */
  writeKey: string;
  /** Base URL of a Segment-compatible ingestion API; batches go to `{endpoint}/v1/batch`. Default: WH_ENDPOINT. */
  endpoint?: string | undefined;
  /** analytics-node's base URL, the other way to say `endpoint`: batches go to `{host}{path}`. */
  host?: string | undefined;
  /** With `host`: the batch route (default "/v1/batch"). */
  path?: string | undefined;
  /** Flush when this many messages are queued. Default 20; 1 sends every message at once. */
  flushAt?: number | undefined;
  /** Alias of flushAt, as the Go library's Size. */
  size?: number | undefined;
  /** analytics-node's (deprecated) name of flushAt. */
  maxEventsInBatch?: number | undefined;
  /** Flush when this long has passed since the last flush. Default 5000. */
  flushAfterMs?: number | undefined;
  /** analytics-node's name of flushAfterMs. */
  flushInterval?: number | undefined;
  /** Attempts per batch at most, the first included. Default 10. */
  maxAttempts?: number | undefined;
  /** analytics-node's: retries after the first attempt (maxAttempts - 1). */
  maxRetries?: number | undefined;
  /** Time allowed for each batch request's whole response. Default 10000. */
  timeoutMs?: number | undefined;
  /** analytics-node's name of timeoutMs. */
  httpRequestTimeout?: number | undefined;
  /** Log to stderr (or to `logger`): default on when DEBUG=analytics. */
  debug?: boolean | undefined;
  logger?: ((line: string) => void) | undefined;
  transport?: HttpTransport | undefined;
  clock?: Clock | undefined;
  /** Aborting stops every batch in flight, its retries included: those batches emit "aborted". */
  signal?: AbortSignal | undefined;
  /**
   * Keep the `context.library` a message names (wh ingest relays what other libraries recorded);
   * by default wh's replaces it, as analytics-node's own does.
   */
  keepOwnLibrary?: boolean | undefined;
}

/** The options checked, with their defaults filled in. */
export interface AnalyticsSettings {
  /** `{endpoint}/v1/batch`. */
  url: URL;
  authorization: string;
  flushAt: number;
  flushAfterMs: number;
  maxAttempts: number;
  timeoutMs: number;
  clock: Clock;
  transport: HttpTransport;
  /** The transport the client made (none given), closed with the client. */
  ownTransport: ClosableTransport | undefined;
  log: ((line: string) => void) | undefined;
  keepOwnLibrary: boolean;
}

const DEFAULT_FLUSH_AT = 20;
const DEFAULT_FLUSH_AFTER_MS = 5_000;

const count = (min: number) => z.optional(numberOf({ min, whole: true }));
const ms = z.optional(millisecondsOf(1));
const aTransport = z.custom<HttpTransport>((value) => typeof (value as { post?: unknown } | null)?.post === "function", {
  error: "must be an HttpTransport, with post(url, headers, body, options)",
});

/** Every option but writeKey and the address (which have codes of their own), each under its own name. */
const analyticsOptions = z.object({
  flushAt: count(1),
  size: count(1),
  maxEventsInBatch: count(1),
  flushAfterMs: ms,
  flushInterval: ms,
  maxAttempts: count(1),
  maxRetries: count(0),
  timeoutMs: ms,
  httpRequestTimeout: ms,
  debug: z.optional(aBoolean()),
  logger: z.optional(aFunction<(line: string) => void>()),
  transport: z.optional(aTransport),
  clock: z.optional(aClock()),
  signal: z.optional(anAbortSignal()),
  keepOwnLibrary: z.optional(aBoolean()),
});

/** Checks the options (throwing AnalyticsError) and fills in the defaults. */
export function resolveAnalyticsOptions(options: AnalyticsOptions): AnalyticsSettings {
  if (typeof options !== "object" || options === null)
    throw new AnalyticsError("E_INVALID_OPTION", `new Analytics(options): options must be an object with writeKey and endpoint (got ${kindOf(options)})`);
  if (typeof options.writeKey !== "string" || options.writeKey === "")
    throw new AnalyticsError("E_NO_WRITE_KEY", `writeKey is required: the source's write key, a string (got ${kindOf(options.writeKey)})`);
  const url = batchUrlOf(options);
  const checked = parseSettings(analyticsOptions, options, "options");
  if (!checked.ok) throw new AnalyticsError("E_INVALID_OPTION", checked.problem);
  const given = checked.value;
  const flushAt = given.flushAt ?? given.size ?? given.maxEventsInBatch ?? DEFAULT_FLUSH_AT;
  const flushAfterMs = given.flushAfterMs ?? given.flushInterval ?? DEFAULT_FLUSH_AFTER_MS;
  const maxAttempts = given.maxAttempts ?? (given.maxRetries === undefined ? 10 : given.maxRetries + 1);
  const timeoutMs = given.timeoutMs ?? given.httpRequestTimeout ?? 10_000;
  // Made only once every option is checked: a client that throws leaves no agent open.
  const ownTransport = given.transport === undefined ? createUndiciTransport({ env: process.env, connectTimeoutMs: timeoutMs }) : undefined;
  const debug = given.debug ?? isDebugEnabled(process.env.DEBUG);
  return {
    url,
    authorization: `Basic ${Buffer.from(`${options.writeKey}:`).toString("base64")}`,
    flushAt,
    flushAfterMs,
    maxAttempts,
    timeoutMs,
    clock: given.clock ?? systemClock,
    transport: given.transport ?? (ownTransport as ClosableTransport),
    ownTransport,
    log: debug ? (given.logger ?? ((line) => process.stderr.write(`${line}\n`))) : undefined,
    keepOwnLibrary: given.keepOwnLibrary === true,
  };
}

/** Where batches go: `{endpoint}/v1/batch`, or analytics-node's `{host}{path}`. */
function batchUrlOf({ endpoint, host, path }: AnalyticsOptions): URL {
  for (const [name, value] of Object.entries({ endpoint, host, path }))
    if (value !== undefined && typeof value !== "string") throw new AnalyticsError("E_INVALID_OPTION", `${name} must be a string (got ${kindOf(value)})`);
  if (host === undefined) {
    if (path !== undefined)
      throw new AnalyticsError("E_INVALID_OPTION", "path goes with host (analytics-node's pair); with endpoint, batches go to {endpoint}/v1/batch");
    return batchUrl("endpoint", endpoint ?? process.env.WH_ENDPOINT, "/v1/batch");
  }
  if (endpoint !== undefined) throw new AnalyticsError("E_INVALID_OPTION", "give endpoint or host, not both: they name the same address");
  return batchUrl("host", host, path === undefined ? "/v1/batch" : `/${path.replace(/^\/+/, "")}`);
}

/** `{base}{route}`, from an absolute http or https base. */
function batchUrl(name: "endpoint" | "host", endpoint: string | undefined, route: string): URL {
  if (endpoint === undefined || endpoint === "") {
    throw new AnalyticsError(
      "E_NO_ENDPOINT",
      "an endpoint is required: pass { endpoint } (or analytics-node's { host }) or set WH_ENDPOINT (the service's own address is not built in)",
    );
  }
  let base: URL;
  try {
    base = new URL(endpoint);
  } catch {
    throw new AnalyticsError("E_NO_ENDPOINT", `${name} ${JSON.stringify(endpoint)} is not an absolute URL`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:")
    throw new AnalyticsError("E_NO_ENDPOINT", `${name} ${JSON.stringify(endpoint)} is not an http or https URL`);
  return new URL(`${base.pathname.replace(/\/+$/, "")}${route}`, base);
}

/** DEBUG=analytics (alone or in a comma- or space-separated list) turns logging on. */
export function isDebugEnabled(debug: string | undefined): boolean {
  if (debug !== undefined && typeof debug !== "string")
    throw new UsageError(`isDebugEnabled(DEBUG): DEBUG's value must be a string or undefined (got ${kindOf(debug)})`);
  return debug?.split(/[\s,]+/).includes("analytics") === true;
}

/** A timeout of close(), under the name the caller gave it (`timeoutMs`, or closeAndFlush's `timeout`). */
export function closeTimeoutMs(name: string, options: unknown, fallbackMs: number): number {
  const checked = parseSettings(z.object({ [name]: ms }), options, `${name === "timeout" ? "closeAndFlush" : "close"}(options): options`);
  if (!checked.ok) throw new AnalyticsError("E_INVALID_OPTION", checked.problem);
  return (checked.value[name] as number | undefined) ?? fallbackMs;
}
