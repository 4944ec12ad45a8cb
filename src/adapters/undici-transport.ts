import { rootCertificates } from "node:tls";
import { Agent, type Dispatcher } from "undici";
import type { HttpTransport, TransportResult } from "../core/deliver.js";
import type { TransportErrorCode } from "../core/retry-policy.js";

export interface UndiciTransportOptions {
  /** Extra trusted CA certificates (PEM), added to Node's own roots. */
  ca?: readonly string[] | undefined;
}

/** undici's original handler interface (still what its request() implements). */
interface LegacyHandler {
  onConnect(abort: (reason: Error) => void): void;
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: Buffer[] | null): void;
  onError(error: Error): void;
}

/** A header's value from undici's raw [name, value, name, value, …] list. */
function findHeader(rawHeaders: readonly Buffer[], name: string): string | undefined {
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if ((rawHeaders[index] as Buffer).toString("latin1").toLowerCase() === name) return (rawHeaders[index + 1] as Buffer).toString("latin1");
  }
  return undefined;
}

export interface ClosableTransport extends HttpTransport {
  close(): Promise<void>;
}

/**
 * Posts with undici: no redirects followed, the whole response within the timeout, certificates
 * always verified. Expected failures come back as values with a code, never as throws.
 * Built on `dispatch` rather than `request` (no body stream per request), with one timer and one
 * abort listener per transport instead of one per request: per-request timers, AbortControllers
 * and listeners were most of the per-event cost of `wh replay` (measured with --cpu-prof).
 */
export function createUndiciTransport(options: UndiciTransportOptions = {}): ClosableTransport {
  const ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...rootCertificates, ...options.ca];
  const agent = new Agent({ connect: ca === undefined ? {} : { ca } });
  const inFlight = new InFlightRequests();
  return {
    post(url, headers, body, { signal, timeoutMs }): Promise<TransportResult> {
      if (signal.aborted) return Promise.resolve(ABORTED);
      return new Promise<TransportResult>((resolve) => {
        let abortRequest: ((reason: Error) => void) | undefined;
        let status = 0;
        let retryAfter: string | undefined;
        const request: InFlightRequest = {
          deadlineMs: Date.now() + timeoutMs,
          timeoutMs,
          signal,
          stopped: undefined,
          stop(result) {
            if (request.stopped !== undefined) return;
            request.stopped = result;
            abortRequest?.(new Error(result.kind === "error" ? result.message : "stopped"));
          },
        };
        const settle = (result: TransportResult): void => {
          inFlight.remove(request);
          resolve(result);
        };
        inFlight.add(request);
        // The handler interface undici's own request() uses: raw headers, no adapter object and
        // no header parsing per response (the onRequestStart/onResponseStart form wraps both).
        const handler: LegacyHandler = {
          onConnect(abort) {
            abortRequest = abort;
            if (request.stopped !== undefined) abort(new Error("stopped"));
          },
          onHeaders(statusCode, rawHeaders) {
            status = statusCode;
            if (statusCode < 200 || statusCode >= 300) retryAfter = findHeader(rawHeaders, "retry-after");
            return true;
          },
          onData() {
            // The answer's body is read and dropped: only the status counts.
            return true;
          },
          onComplete() {
            settle(request.stopped ?? { kind: "response", status, retryAfter });
          },
          onError(error) {
            settle(request.stopped ?? describeError(error));
          },
        };
        agent.dispatch({ origin: url.origin, path: `${url.pathname}${url.search}`, method: "POST", headers, body }, handler as Dispatcher.DispatchHandler);
      });
    },
    close: () => agent.close(),
  };
}

interface InFlightRequest {
  deadlineMs: number;
  timeoutMs: number;
  signal: AbortSignal;
  stopped: TransportResult | undefined;
  stop(result: TransportResult): void;
}

/** How often deadlines are checked: a timeout fires at most this late. */
const SWEEP_EVERY_MS = 25;

/**
 * The requests under way: one interval timer stops those past their deadline, and one listener
 * per abort signal stops those the caller cancels.
 */
class InFlightRequests {
  private readonly requests = new Set<InFlightRequest>();
  private readonly bySignal = new Map<AbortSignal, { requests: Set<InFlightRequest>; onAbort: () => void }>();
  private sweeper: NodeJS.Timeout | undefined;

  add(request: InFlightRequest): void {
    this.requests.add(request);
    let group = this.bySignal.get(request.signal);
    if (group === undefined) {
      const requests = new Set<InFlightRequest>();
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

  remove(request: InFlightRequest): void {
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
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

const TLS_CODE = /^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE)/;

function describeError(error: unknown): TransportResult {
  const codes = errorCodes(error);
  const tlsCode = codes.find((code) => TLS_CODE.test(code));
  if (tlsCode !== undefined) {
    return { kind: "error", code: "tls", message: `untrusted certificate: ${errorMessage(error)} (${tlsCode}); no request was sent` };
  }
  const kind: TransportErrorCode = codes.some((code) => CONNECTION_CODES.has(code)) ? "connection" : "other";
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
