import { rootCertificates } from "node:tls";
import { Agent, type Dispatcher } from "undici";
import type { HttpTransport, TransportResult } from "../core/deliver.js";
import type { TransportErrorCode } from "../core/retry-policy.js";

export interface UndiciTransportOptions {
  /** Extra trusted CA certificates (PEM), added to Node's own roots. */
  ca?: readonly string[] | undefined;
}

type DispatchController = Dispatcher.DispatchController;

export interface ClosableTransport extends HttpTransport {
  close(): Promise<void>;
}

/**
 * Posts with undici: no redirects followed, the whole response within the timeout, certificates
 * always verified. Expected failures come back as values with a code, never as throws.
 * Built on `dispatch` rather than `request`: no body stream and no AbortController per request,
 * which is most of the per-event cost of `wh replay` (measured with --cpu-prof).
 */
export function createUndiciTransport(options: UndiciTransportOptions = {}): ClosableTransport {
  const ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...rootCertificates, ...options.ca];
  const agent = new Agent({ connect: ca === undefined ? {} : { ca } });
  return {
    post(url, headers, body, { signal, timeoutMs }): Promise<TransportResult> {
      if (signal.aborted) return Promise.resolve(ABORTED);
      return new Promise<TransportResult>((resolve) => {
        let controller: DispatchController | undefined;
        let stopped: TransportResult | undefined;
        let status = 0;
        let retryAfter: string | undefined;
        const settle = (result: TransportResult): void => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          resolve(result);
        };
        const stop = (result: TransportResult): void => {
          if (stopped !== undefined) return;
          stopped = result;
          controller?.abort(new Error(result.kind === "error" ? result.message : "stopped"));
        };
        const onAbort = (): void => stop(ABORTED);
        const timer = setTimeout(() => stop({ kind: "error", code: "timeout", message: `no response within ${timeoutMs}ms` }), timeoutMs);
        signal.addEventListener("abort", onAbort, { once: true });
        agent.dispatch(
          { origin: url.origin, path: `${url.pathname}${url.search}`, method: "POST", headers, body },
          {
            onRequestStart(started) {
              controller = started;
              if (stopped !== undefined) started.abort(new Error("stopped"));
            },
            onResponseStart(_controller, statusCode, responseHeaders) {
              status = statusCode;
              const value = responseHeaders["retry-after"];
              retryAfter = Array.isArray(value) ? value[0] : value;
            },
            onResponseData() {
              // The answer's body is read and dropped: only the status counts.
            },
            onResponseEnd() {
              settle(stopped ?? { kind: "response", status, retryAfter });
            },
            onResponseError(_controller, error) {
              settle(stopped ?? describeError(error));
            },
          },
        );
      });
    },
    close: () => agent.close(),
  };
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
