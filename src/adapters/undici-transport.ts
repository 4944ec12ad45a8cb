import { createRequire } from "node:module";
import type { Dispatcher } from "undici";
import type { HttpTransport, TransportResult } from "../core/deliver.js";
import type { TransportErrorCode } from "../core/retry-policy.js";
import { loadAgent } from "./undici-agent.js";

// What is loaded only when needed: node:tls (extra CAs) and the whole of undici (a proxy).
const require = createRequire(import.meta.url);

const Agent = loadAgent();

export interface UndiciTransportOptions {
  /** Extra trusted CA certificates (PEM), added to Node's own roots. */
  ca?: readonly string[] | undefined;
  /** HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from here (default: none, no proxy). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Keep the start of every answer's body, 2xx included (for --verbose); default only of the others. */
  keepEveryBody?: boolean | undefined;
  /**
   * How long a TCP connect and TLS handshake may take (default: undici's 10 s). Give it the
   * attempt's timeout: a connection still not made by then is of no use, and while it is being
   * made it keeps the agent from closing and the process from exiting.
   */
  connectTimeoutMs?: number | undefined;
}

const PROXY_VARIABLES = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];

/** An answer's body is kept up to this many bytes, for reports. */
export const BODY_EXCERPT_BYTES = 1024;

export interface ClosableTransport extends HttpTransport {
  close(): Promise<void>;
}

/**
 * Posts with undici: no redirects followed, the whole response within the timeout, certificates
 * always verified. Expected failures come back as values with a code, never as throws.
 *
 * Built for replay's hot path, after profiling: `dispatch` with undici's raw handler interface
 * (the one its own request() implements: no body stream, no header parsing per response), one
 * handler object per request, and one deadline sweeper and one abort listener per transport
 * instead of a timer, an AbortController and a listener per request.
 */
export function createUndiciTransport(options: UndiciTransportOptions = {}): ClosableTransport {
  // node:tls only with extra CAs: loading it costs a plain-HTTP `wh send` 1.5 ms (undici loads it for https).
  const ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...defaultCertificates(), ...options.ca];
  // Certificates are always checked: rejectUnauthorized is set here, so that
  // NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn the check off.
  const tls = { rejectUnauthorized: true as const, ...(ca === undefined ? {} : { ca }) };
  const connect = options.connectTimeoutMs === undefined ? tls : { ...tls, timeout: options.connectTimeoutMs };
  const env = options.env ?? {};
  const proxied = PROXY_VARIABLES.some((name) => (env[name] ?? "") !== "");
  const agent: Dispatcher = proxied ? createProxyAgent(env, tls, connect) : new Agent({ connect });
  const keepEveryBody = options.keepEveryBody === true;
  const inFlight = new InFlightRequests();
  const targets = new WeakMap<URL, { origin: string; path: string }>();
  return {
    post(url, headers, body, { signal, timeoutMs, method = "POST" }): Promise<TransportResult> {
      if (signal.aborted) return Promise.resolve(ABORTED);
      let target = targets.get(url);
      if (target === undefined) {
        target = { origin: url.origin, path: `${url.pathname}${url.search}` };
        targets.set(url, target);
      }
      const { origin, path } = target;
      return new Promise<TransportResult>((resolve) => {
        const handler = new PostHandler(resolve, inFlight, signal, timeoutMs, keepEveryBody);
        inFlight.add(handler);
        agent.dispatch({ origin, path, method, headers, body }, handler as unknown as Dispatcher.DispatchHandler);
      });
    },
    close: () => agent.close(),
  };
}

/**
 * What Node trusts by default, to which --ca adds: a `ca` list replaces Node's own. Node 22.15 and
 * later tell it whole, NODE_EXTRA_CA_CERTS included; Node 20 has only its bundled roots, so
 * there the extra certificates are not trusted alongside --ca (as the README says).
 */
function defaultCertificates(): readonly string[] {
  const tls = require("node:tls") as typeof import("node:tls") & { getCACertificates?: (type: "default") => string[] };
  return typeof tls.getCACertificates === "function" ? tls.getCACertificates("default") : tls.rootCertificates;
}

/** One request under way: undici's handler, and what the sweeper and the abort listener stop. */
class PostHandler {
  readonly deadlineMs: number;
  stopped: TransportResult | undefined;
  private abortRequest: ((reason: Error) => void) | undefined;
  private status = 0;
  private retryAfter: string | undefined;
  private location: string | undefined;
  /** The start of the body, collected only when it will be reported. */
  private body: Buffer[] | undefined;
  private bodyBytes = 0;

  constructor(
    private readonly resolve: (result: TransportResult) => void,
    private readonly inFlight: InFlightRequests,
    readonly signal: AbortSignal,
    readonly timeoutMs: number,
    private readonly keepEveryBody: boolean,
  ) {
    this.deadlineMs = Date.now() + timeoutMs;
  }

  stop(result: TransportResult): void {
    if (this.stopped !== undefined) return;
    this.stopped = result;
    if (this.abortRequest !== undefined) this.abortRequest(new Error(result.kind === "error" ? result.message : "stopped"));
    // Not connected yet (a TCP connect or TLS handshake that hangs): undici hands over the abort
    // only once connected, or fails at its connect timeout (10 s unless connectTimeoutMs). The
    // attempt ends now; the request is aborted if undici reaches onConnect, and its end is ignored.
    else this.settle(result);
  }

  onConnect(abort: (reason: Error) => void): void {
    this.abortRequest = abort;
    if (this.stopped !== undefined) abort(new Error("stopped"));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode;
    const success = statusCode >= 200 && statusCode < 300;
    if (!success) {
      this.retryAfter = findHeader(rawHeaders, "retry-after");
      if (statusCode >= 300 && statusCode < 400) this.location = findHeader(rawHeaders, "location");
    }
    // A 2xx answer's body is read and dropped (the hot path of replay) unless --verbose shows it.
    if (!success || this.keepEveryBody) this.body = [];
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.body !== undefined && this.bodyBytes < BODY_EXCERPT_BYTES) {
      const piece = chunk.subarray(0, BODY_EXCERPT_BYTES - this.bodyBytes);
      this.body.push(Buffer.from(piece));
      this.bodyBytes += piece.length;
    }
    return true;
  }

  onComplete(): void {
    const body = this.body === undefined ? undefined : Buffer.concat(this.body).toString("utf8");
    this.settle(
      this.stopped ?? {
        kind: "response",
        status: this.status,
        retryAfter: this.retryAfter,
        ...(this.location === undefined ? {} : { location: this.location }),
        ...(body === undefined ? {} : { body }),
      },
    );
  }

  onError(error: Error): void {
    this.settle(this.stopped ?? describeError(error));
  }

  /** Called once when stopped before connecting, and again when undici ends the request: the first result counts. */
  private settle(result: TransportResult): void {
    this.inFlight.remove(this);
    this.inFlight.answer(this.resolve, result);
  }
}

/** A header's value from undici's raw [name, value, name, value, …] list. */
function findHeader(rawHeaders: readonly Buffer[], name: string): string | undefined {
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if ((rawHeaders[index] as Buffer).toString("latin1").toLowerCase() === name) return (rawHeaders[index + 1] as Buffer).toString("latin1");
  }
  return undefined;
}

/** How often deadlines are checked: a timeout fires at most this late. */
const SWEEP_EVERY_MS = 25;

/**
 * The requests under way: one interval timer stops those past their deadline, and one listener
 * per abort signal stops those the caller cancels.
 */
class InFlightRequests {
  private readonly requests = new Set<PostHandler>();
  private readonly bySignal = new Map<AbortSignal, { requests: Set<PostHandler>; onAbort: () => void }>();
  private sweeper: NodeJS.Timeout | undefined;
  /** Answers not yet handed to their callers: resolve, result, resolve, result, … */
  private answers: unknown[] = [];

  /**
   * Hands a result to its caller once undici has made the connection available again, so that
   * the caller's next request reuses it. undici does that in a setImmediate it queues when it ends
   * a request, after our handler has returned. The answers of one turn of the event loop are
   * gathered, and handed over two setImmediates later: the first runs in the same check phase as
   * undici's, and may come before some of them; the second runs in the next turn, after all.
   * Heard at once, the next request found every connection still busy and opened one more: 817
   * connections for --concurrency 512, 101 for 64, and 2-9% more CPU per event. One deferral per
   * answer (a microtask, then a setImmediate) cost 1.3 KB of the 14 KB replay allocated per event.
   */
  answer(resolve: (result: TransportResult) => void, result: TransportResult): void {
    if (this.answers.length === 0) setImmediate(sealAnswers, this);
    this.answers.push(resolve, result);
  }

  /** The answers gathered so far, for the next turn; later ones gather anew. */
  takeAnswers(): unknown[] {
    const answers = this.answers;
    this.answers = [];
    return answers;
  }

  add(request: PostHandler): void {
    this.requests.add(request);
    let group = this.bySignal.get(request.signal);
    if (group === undefined) {
      const requests = new Set<PostHandler>();
      const onAbort = (): void => {
        for (const each of requests) each.stop(ABORTED);
      };
      group = { requests, onAbort };
      this.bySignal.set(request.signal, group);
      request.signal.addEventListener("abort", onAbort, { once: true });
    }
    group.requests.add(request);
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_EVERY_MS);
  }

  remove(request: PostHandler): void {
    this.requests.delete(request);
    const group = this.bySignal.get(request.signal);
    if (group !== undefined) {
      group.requests.delete(request);
      if (group.requests.size === 0) {
        request.signal.removeEventListener("abort", group.onAbort);
        this.bySignal.delete(request.signal);
      }
    }
    if (this.requests.size === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private sweep(): void {
    const nowMs = Date.now();
    for (const request of this.requests) {
      if (request.deadlineMs <= nowMs) request.stop({ kind: "error", code: "timeout", message: `no response within ${request.timeoutMs}ms` });
    }
  }
}

function sealAnswers(inFlight: InFlightRequests): void {
  setImmediate(handAnswers, inFlight.takeAnswers());
}

function handAnswers(answers: unknown[]): void {
  for (let index = 0; index < answers.length; index += 2) (answers[index] as (result: TransportResult) => void)(answers[index + 1] as TransportResult);
}

const ABORTED: TransportResult = { kind: "error", code: "aborted", message: "cancelled" };

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "UND_ERR_RES_CONTENT_LENGTH_MISMATCH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  // This machine ran short (descriptors, buffers, ephemeral ports): a wait frees them, so the
  // attempt is retried like a refused connection, never a final failure.
  "EMFILE",
  "ENFILE",
  "ENOBUFS",
  "ENOMEM",
  "EAGAIN",
  "EADDRNOTAVAIL",
]);

/** What a TLS client sees when the server answers in plain HTTP. */
const NOT_TLS_CODES = new Set(["ERR_SSL_WRONG_VERSION_NUMBER", "ERR_SSL_PACKET_LENGTH_TOO_LONG", "ERR_SSL_HTTP_REQUEST"]);

const TLS_CODE = /^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE)/;

/** Our own shutdown (the agent closed or destroyed under a request): the request is unfinished, not failed. */
const OWN_SHUTDOWN_CODES = new Set(["UND_ERR_DESTROYED", "UND_ERR_CLOSED", "UND_ERR_ABORTED"]);

function describeError(error: unknown): TransportResult {
  const codes = errorCodes(error);
  if (codes.some((code) => OWN_SHUTDOWN_CODES.has(code))) return ABORTED;
  if (codes.some((code) => NOT_TLS_CODES.has(code))) {
    return { kind: "error", code: "tls", message: "the server does not speak TLS (is it a plain HTTP port? then use an http:// URL); no request was sent" };
  }
  const tlsCode = codes.find((code) => TLS_CODE.test(code));
  if (tlsCode !== undefined) {
    return { kind: "error", code: "tls", message: `untrusted certificate: ${errorMessage(error)} (${tlsCode}); no request was sent` };
  }
  // A malformed answer (undici's HTTPParserError, whose code it often leaves unset; a body
  // shorter than its length) is retried like a reset connection.
  const malformed = (error as { name?: unknown }).name === "HTTPParserError" || codes.some((code) => code.startsWith("HPE_"));
  const kind: TransportErrorCode = malformed || codes.some((code) => CONNECTION_CODES.has(code)) ? "connection" : "other";
  const text = errorMessage(error);
  const code = codes[codes.length - 1];
  return { kind: "error", code: kind, message: code === undefined || text.includes(code) ? text : `${text} (${code})` };
}

/** undici puts the system error's code on the error itself or on its cause: collect them all. */
function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 4; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

/** The innermost message: the system's own words (`connect ECONNREFUSED 127.0.0.1:9`). */
function errorMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (let current = (error as { cause?: unknown }).cause, depth = 0; current instanceof Error && depth < 4; depth += 1) {
    message = current.message;
    current = current.cause;
  }
  return message;
}

/** HTTPS_PROXY / HTTP_PROXY / NO_PROXY as undici reads them, with the same certificate rules to the target and the proxy. */
function createProxyAgent(env: NodeJS.ProcessEnv, tls: { rejectUnauthorized: true; ca?: string[] }, connect: typeof tls & { timeout?: number }): Dispatcher {
  // The whole package here: the proxy agent tunnels with Dispatcher#connect, which undici's index
  // adds to its dispatchers (loading the agent's file alone would leave it out).
  const { EnvHttpProxyAgent } = require("undici") as typeof import("undici");
  const pick = (...names: string[]): string | undefined => names.map((name) => env[name]).find((value) => value !== undefined && value !== "");
  return new EnvHttpProxyAgent({
    httpProxy: pick("HTTP_PROXY", "http_proxy"),
    httpsProxy: pick("HTTPS_PROXY", "https_proxy"),
    noProxy: pick("NO_PROXY", "no_proxy") ?? "",
    connect,
    requestTls: tls,
    proxyTls: tls,
  });
}
