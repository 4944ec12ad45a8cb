import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { inexactNumberProblem } from "../core/message/exact-numbers.js";
import { parseJsonNumbers } from "../core/message/parse-json.js";
import { LoopTurns } from "./loop-turns.js";
import { basicAuthWriteKey, settingsWriteKey, trackingCall, type TrackingErrorCode } from "../core/message/tracking.js";
import { acceptsHost, hostKey } from "./own-host.js";
import { BodyError, readBody } from "./tracking-body.js";

/** One tracking call as it arrived: what the engine decides on. */
export interface TrackingRequest {
  path: string;
  /** identify, track, …, or batch. */
  call: string;
  body: unknown;
  /** From `Authorization: Basic`; the body's `writeKey` is read by the engine. */
  authWriteKey: string | undefined;
  ip: string | undefined;
  bytes: number;
  headers: IncomingHttpHeaders;
}

export interface TrackingAnswer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export interface TrackingServerOptions {
  host: string;
  port: number;
  /** Names besides its own that the operator's paths answer and the settings name (--allow-host). */
  allowedHosts?: readonly string[] | undefined;
  /** The largest request body, after gzip is undone. */
  maxBodyBytes: number;
  accept(request: TrackingRequest): Promise<TrackingAnswer>;
  /** Answered to an HTTP error (a body too large, bad JSON) before `accept` sees it. */
  onRefused?(path: string, refusal: Refusal): void;
  health(): Record<string, unknown>;
  metrics(): string | Promise<string>;
  /** POST /retry: deliveries waiting to retry try again now; how many did. */
  retry(): number;
  /** analytics-next's CDN settings for a write key, its API at `host` (host:port, as the page reached this server; see reachedAt). */
  settings(writeKey: string, host: string): TrackingAnswer;
  /** On close, how long requests being received or answered may finish before their connections are cut. */
  closeGraceMs: number;
}

/** An error answer: `{ success: false, code, message }` with this status. */
export interface Refusal {
  status: number;
  code: TrackingErrorCode;
  message: string;
}

export interface TrackingServer {
  url: string;
  port: number;
  /** Stops accepting; requests being answered finish. */
  close(): Promise<void>;
}

// Browsers (analytics.js) post across origins; the write key is in the body or basic auth, never a cookie.
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-max-age": "86400",
};

/**
 * The headers the Segment browser SDKs send: analytics-next adds X-Retry-Count to every retry
 * (plugins/segmentio/fetch-dispatcher.ts), and a preflight that did not allow it made Chromium
 * block every retry after a 503.
 */
const SDK_HEADERS = "Content-Type, Authorization, Content-Encoding, X-Retry-Count";
/** Header names only (RFC 9110 tokens, comma-separated): anything else is not echoed back. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

/**
 * A preflight's answer: whatever headers the page asks for (a page's own fetch wrappers add theirs
 * too, and no cookie rides on them: the write key is the only credential), else the SDKs' own.
 */
function preflightHeaders(requested: string | undefined): Record<string, string> {
  const asked = requested?.trim() ?? "";
  return { ...CORS, "access-control-allow-headers": HEADER_LIST.test(asked) ? asked : SDK_HEADERS, vary: "Access-Control-Request-Headers" };
}

/** While closing, how often connections gone idle (their last request answered) are ended. */
const CLOSE_CHECK_MS = 50;

/**
 * The HTTP side of `wh serve`: Segment's tracking API paths, gzip or deflate request bodies, JSON
 * or text/plain (analytics.js), CORS, GET /health and /metrics. What to do with a call is the
 * engine's (`accept`).
 */
export async function startTrackingServer(given: TrackingServerOptions): Promise<TrackingServer> {
  const options = { ...given, allowedHosts: given.allowedHosts?.map(hostKey) };
  // Parsing and accepting a batch is a few milliseconds of work: one request per turn of the
  // loop, so deliveries in flight are answered between two requests, not after all of them.
  const turns = new LoopTurns();
  let closing = false;
  const server = createServer((request, response) => {
    // Closing: answered, then the connection ends (a kept-alive one would hold close() open).
    if (closing) response.shouldKeepAlive = false;
    handle(request, response, options, turns).catch((error: unknown) => {
      answer(response, { status: 500, body: { success: false, code: "internal_error", message: error instanceof Error ? error.message : String(error) } });
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(options.port, options.host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        closing = true;
        // Idle connections end now; those answering a request end once it is answered (each
        // check ends the ones gone idle since); past the grace, every connection is cut. A request
        // cut before its answer acknowledged nothing: its client sends it again. Without the cut, a
        // client that stalls mid-request held the close for Node's requestTimeout (5 minutes).
        const idle = setInterval(() => server.closeIdleConnections(), CLOSE_CHECK_MS);
        const cut = setTimeout(() => server.closeAllConnections(), options.closeGraceMs);
        server.close(() => {
          clearInterval(idle);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

async function handle(request: IncomingMessage, response: ServerResponse, options: TrackingServerOptions, turns: LoopTurns): Promise<void> {
  const path = (request.url ?? "/").split("?")[0] as string;
  const ownHost = acceptsHost(options.host, request.socket.localPort ?? 0, request.headers.host, options.allowedHosts);
  // The operator's paths answer without CORS (a web page has no business reading them), and
  // only by the server's own names: a page whose name was rebound to this address reads nothing.
  if (OPERATOR_PATHS.has(path) && !ownHost) return refuse(response, request, options, path, 403, "forbidden", FOREIGN_HOST, false);
  if (request.method === "GET" && path === "/health") return answer(response, { status: 200, body: options.health() }, request, false);
  if (request.method === "GET" && path === "/metrics") {
    request.resume();
    const text = await options.metrics();
    response.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(text);
    return;
  }
  if (path === "/retry") return answerRetry(request, response, options);
  const settingsKey = request.method === "GET" ? settingsWriteKey(path) : undefined;
  if (settingsKey !== undefined) return answer(response, options.settings(settingsKey, reachedAt(request, ownHost)), request);
  const call = trackingCall(path);
  if (call === undefined)
    return refuse(
      response,
      request,
      options,
      path,
      404,
      "not_found",
      `no such endpoint: ${request.method} ${path} (the tracking API is POST /v1/identify, /v1/track, /v1/page, /v1/screen, /v1/group, /v1/alias, /v1/batch; analytics-next settings are GET /v1/projects/<writeKey>/settings)`,
      false,
    );
  if (request.method === "OPTIONS") {
    request.resume();
    response.writeHead(204, preflightHeaders(request.headers["access-control-request-headers"])).end();
    return;
  }
  if (request.method !== "POST") return refuse(response, request, options, path, 405, "method_not_allowed", `${path} takes POST`);
  let text: string;
  let bytes: number;
  try {
    ({ text, bytes } = await readBody(request, options.maxBodyBytes));
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    return refuse(response, request, options, path, error.status, error.code, error.message);
  }
  await turns.next();
  // Returned, not awaited: this frame holds the body's text, and would until the answer.
  return acceptBody(request, response, options, path, call, text, bytes);
}

/**
 * A tracking call's body parsed and handed to `accept`, answered once it answers. Not an async
 * function, so that nothing waiting for the answer (the store's fsync) holds the body's text or
 * its parsed value: they die young, as the bare server's do, instead of being copied by every
 * collection until then.
 */
function acceptBody(
  request: IncomingMessage,
  response: ServerResponse,
  options: TrackingServerOptions,
  path: string,
  call: string,
  text: string,
  bytes: number,
): Promise<void> | undefined {
  const parsed = parseJsonNumbers(text);
  if (!parsed.ok) {
    refuse(response, request, options, path, 400, "invalid_json", `the body is not JSON: ${parsed.error}`);
    return undefined;
  }
  const inexact = parsed.numbersToCheck ? inexactNumberProblem(text) : undefined;
  if (inexact !== undefined) {
    refuse(response, request, options, path, 400, "invalid_request", inexact);
    return undefined;
  }
  return options
    .accept({
      path,
      call,
      body: parsed.value,
      authWriteKey: basicAuthWriteKey(request.headers.authorization),
      ip: request.socket.remoteAddress,
      bytes,
      headers: request.headers,
    })
    .then((result) => answer(response, result));
}

/**
 * POST /retry, for the operator (curl, a script): it changes what the server does, so a web page
 * must not reach it. Browsers send Origin with every cross-site POST (and a form's), curl and
 * scripts none: a request that carries one is refused.
 */
function answerRetry(request: IncomingMessage, response: ServerResponse, options: TrackingServerOptions): void {
  const refusal =
    request.method !== "POST"
      ? { status: 405, body: { success: false, code: "method_not_allowed", message: "/retry takes POST" }, headers: { allow: "POST" } }
      : request.headers.origin !== undefined
        ? {
            status: 403,
            body: {
              success: false,
              code: "forbidden",
              message: "POST /retry is for the operator: a request from a web page (it has an Origin header) is refused",
            },
          }
        : undefined;
  answer(response, refusal ?? { status: 200, body: { retried: options.retry() } }, request, false);
}

const OPERATOR_PATHS = new Set(["/health", "/metrics", "/retry"]);
/** Never the Host itself: the answer goes to whoever sent it. */
const FOREIGN_HOST =
  "the Host header names another server: /health, /metrics and /retry answer requests to this server's address or localhost, and to names given with --allow-host";

/**
 * host:port as the client reached this server: its Host header when it is one of the server's
 * names (see acceptsHost), else the address the connection came to, which reaches it all the
 * same: a page under a rebound name gets no foreign name echoed, nor do SDKs that use a name of
 * the machine no one allowed.
 */
function reachedAt(request: IncomingMessage, ownHost: boolean): string {
  if (ownHost) return request.headers.host as string;
  const address = (request.socket.localAddress ?? "127.0.0.1").replace(/^::ffff:/, "");
  return `${address.includes(":") ? `[${address}]` : address}:${request.socket.localPort}`;
}

function refuse(
  response: ServerResponse,
  request: IncomingMessage,
  options: TrackingServerOptions,
  path: string,
  status: number,
  code: TrackingErrorCode,
  message: string,
  cors = true,
): void {
  options.onRefused?.(path, { status, code, message });
  answer(response, { status, body: { success: false, code, message } }, request, cors);
}

/** Sends a JSON answer; `cors` for the tracking paths only. */
function answer(response: ServerResponse, { status, body, headers }: TrackingAnswer, request?: IncomingMessage, cors = true): void {
  // A request refused before its body was read: the rest of the body is drained, not left to block the connection.
  request?.resume();
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { ...(cors ? CORS : {}), ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}
