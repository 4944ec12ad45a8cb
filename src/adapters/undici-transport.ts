import { rootCertificates } from "node:tls";
import { Agent } from "undici";
import type { HttpTransport, TransportResult } from "../core/deliver.js";
import type { TransportErrorCode } from "../core/retry-policy.js";

export interface UndiciTransportOptions {
  /** Extra trusted CA certificates (PEM), added to Node's own roots. */
  ca?: readonly string[] | undefined;
}

export interface ClosableTransport extends HttpTransport {
  close(): Promise<void>;
}

const TIMED_OUT = Symbol("timed out");

/**
 * Posts with undici: no redirects followed, the whole response within the timeout, certificates
 * always verified. Expected failures come back as values with a code, never as throws.
 */
export function createUndiciTransport(options: UndiciTransportOptions = {}): ClosableTransport {
  const ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...rootCertificates, ...options.ca];
  const agent = new Agent({ connect: ca === undefined ? {} : { ca } });
  return {
    async post(url, headers, body, { signal, timeoutMs }): Promise<TransportResult> {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(TIMED_OUT), timeoutMs);
      const onAbort = (): void => controller.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        const response = await agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: "POST",
          headers,
          body,
          signal: controller.signal,
        });
        await response.body.dump({ signal: controller.signal, limit: 1_048_576 });
        const retryAfter = response.headers["retry-after"];
        return { kind: "response", status: response.statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
      } catch (error) {
        if (controller.signal.reason === TIMED_OUT) return { kind: "error", code: "timeout", message: `no response within ${timeoutMs}ms` };
        if (signal.aborted) return { kind: "error", code: "aborted", message: "cancelled" };
        return describeError(error);
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      }
    },
    close: () => agent.close(),
  };
}

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
