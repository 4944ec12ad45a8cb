import type { TransportResult } from "../core/deliver.js";
import type { TransportErrorCode } from "../core/retry-policy.js";

/** A request the caller cancelled, or that our own shutdown cut: unfinished, not failed. */
export const ABORTED: TransportResult = { kind: "error", code: "aborted", message: "cancelled" };

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

/** An error undici reports for a request, as the value the transport answers with. */
export function describeError(error: unknown): TransportResult {
  const codes = errorCodes(error);
  if (codes.some((code) => OWN_SHUTDOWN_CODES.has(code))) return ABORTED;
  if (codes.some((code) => NOT_TLS_CODES.has(code))) {
    return { kind: "error", code: "tls", message: "the server does not speak TLS (is it a plain HTTP port? then use an http:// URL); no request was sent" };
  }
  const tlsCode = codes.find((code) => TLS_CODE.test(code));
  if (tlsCode !== undefined) return { kind: "error", code: "tls", message: describeTlsRefusal(errorMessage(error), tlsCode) };
  if (codes.includes("ECONNREFUSED")) return { kind: "error", code: "connection", message: describeRefusal(error) };
  // A malformed answer (undici's HTTPParserError, whose code it often leaves unset; a body
  // shorter than its length) is retried like a reset connection.
  const malformed = (error as { name?: unknown }).name === "HTTPParserError" || codes.some((code) => code.startsWith("HPE_"));
  const kind: TransportErrorCode = malformed || codes.some((code) => CONNECTION_CODES.has(code)) ? "connection" : "other";
  const text = errorMessage(error);
  const code = codes[codes.length - 1];
  return { kind: "error", code: kind, message: code === undefined || text.includes(code) ? text : `${text} (${code})` };
}

/** A certificate whose issuer is unknown: self-signed, or signed by a CA not trusted here. */
const UNKNOWN_ISSUER_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
]);

/**
 * A certificate refused, naming the system's reason and its code (stable text for --json and
 * dead letters). An unknown issuer is what a local or company CA looks like: the way out is to
 * trust that CA, so the words say how; a wrong name or an expired certificate has no such fix.
 */
function describeTlsRefusal(reason: string, code: string): string {
  // Node 24 adds its own advice after a ";" ("if the root CA is installed locally, try running
  // Node.js with --use-system-ca"): the reason alone, so the text is the same on every Node.
  const [why = reason] = reason.split(";");
  const hint = UNKNOWN_ISSUER_CODES.has(code) ? ": give its CA with --ca FILE (or NODE_EXTRA_CA_CERTS)" : "";
  return `certificate not trusted (${why}, ${code})${hint}; no request was sent`;
}

/**
 * A refused connection in a person's words, with the address and port the system tried
 * (`connect ECONNREFUSED 127.0.0.1:42031` says it to those who know the code).
 */
function describeRefusal(error: unknown): string {
  const tried = refusedAddress(error);
  return `nothing is listening on ${tried ?? "the URL's host and port"} (connection refused)`;
}

/** `127.0.0.1:42031` or `[::1]:42031`, from the system error in the chain (or the first of an AggregateError's). */
function refusedAddress(error: unknown): string | undefined {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 4; depth += 1) {
    const { address, port, errors } = current as { address?: unknown; port?: unknown; errors?: unknown };
    if (typeof address === "string" && typeof port === "number") return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
    current = Array.isArray(errors) && errors.length > 0 ? errors[0] : (current as { cause?: unknown }).cause;
  }
  return undefined;
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
