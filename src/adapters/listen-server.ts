import { once } from "node:events";
import { isObject, requireArgument } from "../core/arguments.js";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { captureLines } from "../core/capture.js";
import { OutputWriteError } from "../core/errors.js";
import { refusalReason } from "../core/explain-signature.js";
import { parseJson, type ParsedJson } from "../core/message/parse-json.js";
import { decideRoute, type EventMatch, type ListenRoute } from "../core/listen-routes.js";
import { redactUrlText } from "../core/redact.js";
import { SIGNATURE_HEADER, verifyBody } from "../core/sign.js";
import {
  STANDARD_FAILURES,
  type SigningScheme,
  standardKeys,
  verifyStandard,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
} from "../core/standard-webhooks.js";
import { untrusted, type Untrusted } from "../core/untrusted.js";
import { AppendFile } from "./append-file.js";

/** valid-batch: a batch body signed over its first event, as Segment's Actions destination signs. */
export type SignatureCheck = "valid" | "valid-batch" | "invalid" | "missing" | "unchecked";

export interface ReceivedRequest {
  /** Increasing from 1 within one receiver. */
  id: number;
  receivedAt: Date;
  /** One of the methods node:http knows: never anything else. */
  method: string;
  /** The request target as the sender wrote it (path and query). */
  path: Untrusted;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, exactly as they arrived. */
  body: Buffer;
  /** The parsed body, when it is JSON. */
  json: unknown;
  signature: SignatureCheck;
  /** For a refused signature (invalid or missing): why, as wh listen's line and the inspector both say it. */
  reason: string | undefined;
  /** The status the receiver answered with. */
  status: number;
  /** The body of that answer, as text. */
  answer: string;
  /** Whether the body was appended to the capture file. */
  captured: boolean;
  /** Why it could not be (it was then answered 503, so that the sender retries). */
  captureError?: string | undefined;
  /** With --forward-to or --route: what the app answered (it is what the sender got), or why it could not. */
  forwarded?: ForwardResult | undefined;
  /** Its event did not match `filter`: answered and captured, neither forwarded nor to be shown. */
  filtered: boolean;
  /** With routes: its event matched none, and there is no forwardTo to fall back on; it was answered here. */
  unrouted: boolean;
}

export type ForwardResult =
  | { url: string; status: number; headers: Record<string, string>; body: string; durationMs: number }
  | { url: string; error: Untrusted; durationMs: number };

export interface ReceiverOptions {
  host?: string | undefined;
  /** 0 (the default) picks a free port. */
  port?: number | undefined;
  /** When set, a request whose X-Signature does not match its raw bytes is answered 401. */
  secret?: string | undefined;
  /** standard: the secret (whsec_) checks Standard Webhooks' three headers instead, the timestamp within `toleranceSeconds` (300) of its arrival. */
  scheme?: SigningScheme | undefined;
  toleranceSeconds?: number | undefined;
  /** The status for a request that passes the checks. Default 200. */
  status?: number | undefined;
  /** NDJSON file that every accepted request is appended to, as capture records (see core/capture). */
  out?: string | undefined;
  /** Each request that passes the checks is sent on here with its exact bytes and headers; its answer is the answer. */
  forwardTo?: string | undefined;
  /** Only requests whose event matches are forwarded (see core/listen-routes); the others are answered `status`. */
  filter?: EventMatch | undefined;
  /** A request goes to the first route its event matches, else to forwardTo, else nowhere (answered `status`). */
  routes?: readonly ListenRoute[] | undefined;
  onRequest?: (request: ReceivedRequest) => void;
}

export interface Receiver {
  url: string;
  port: number;
  /**
   * Settles with the error once the capture file cannot be written any more (it was removed or
   * replaced, an I/O error): every request is then answered 503. A full disk is not such an end:
   * those requests are answered 503 and the next ones captured when there is space again.
   */
  captureStopped: Promise<OutputWriteError>;
  close(): Promise<void>;
}

/** Errors a capture recovers from by itself: space can come back. */
const SPACE_ERRORS = new Set(["ENOSPC", "EDQUOT"]);

/** Headers that belong to one connection, not to the request: never forwarded. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "content-length",
  "expect",
]);

/** The headers of a request as another server should see them: without the connection's own. */
export function forwardableHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name.toLowerCase())) continue;
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** The local webhook receiver behind `wh listen`, the demo and the tests of the CLI. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  requireArgument(isObject(options), "options", "an object", options);
  const given = options.port;
  if (options.scheme === "standard" && options.secret !== undefined) standardKeys(options.secret, "the secret");
  requireArgument(given === undefined || (Number.isInteger(given) && given >= 0 && given <= 65_535), "port", "a whole number from 0 to 65535", given);
  // Opened (and checked) before listening, never through a symbolic link. Each request's records
  // are written before it is answered, so that a 2xx always means captured.
  const capture = options.out === undefined ? undefined : AppendFile.open(options.out, "--out", "append", { afterFailure: "retry" });
  const routing = { filter: options.filter, routes: options.routes ?? [], forwardTo: options.forwardTo };
  const forward = createForwarder();
  let stopCapture!: (error: OutputWriteError) => void;
  const captureStopped = new Promise<OutputWriteError>((resolve) => (stopCapture = resolve));
  let lastId = 0;
  const respond = async (request: IncomingMessage, body: Buffer, response: ServerResponse): Promise<void> => {
    const receivedAt = new Date();
    const method = request.method ?? "";
    const path = request.url ?? "";
    const { signature, reason } = checkSignature(options, request.headers, body, receivedAt.getTime());
    const parsed = parseJson(body.toString("utf8"));
    const json = parsed.ok ? parsed.value : undefined;
    const signatureName = options.scheme === "standard" ? WEBHOOK_SIGNATURE_HEADER : SIGNATURE_HEADER;
    let [status, answer] = firstAnswer(method, signature, signatureName, parsed, options.status ?? 200);
    let headers: Record<string, string> = { "content-type": "application/json" };
    const accepted = method === "POST" && status !== 401 && status !== 400;
    // A refused request is answered here whatever its event: the filter and routes judge only the accepted.
    const decision = accepted ? decideRoute(routing, json) : ({ kind: "answer" } as const);
    const wantsCapture = capture !== undefined && accepted && (decision.kind === "forward" || (status >= 200 && status < 300));
    let captureError: string | undefined;
    if (wantsCapture) {
      const failure = writeCapture(capture, captureLines({ receivedAt, method, path, headers: request.headers, body }, json));
      if (failure !== undefined) {
        [status, answer, captureError] = [503, { error: "the request could not be captured; retry later" }, failure.error.message];
        if (failure.fatal) stopCapture(failure.error);
      }
    }
    let forwarded: ForwardResult | undefined;
    let answerText = JSON.stringify(answer);
    if (decision.kind === "forward" && captureError === undefined) {
      forwarded = await forward(decision.url, method, request.headers, body);
      if ("error" in forwarded)
        [status, answerText] = [502, JSON.stringify({ error: `could not forward to ${forwarded.url}: ${forwarded.error.unsafeRaw()}` })];
      else [status, headers, answerText] = [forwarded.status, forwarded.headers, forwarded.body];
    }
    if (!response.destroyed) response.writeHead(status, headers).end(answerText);
    lastId += 1;
    options.onRequest?.({
      id: lastId,
      receivedAt,
      method,
      path: untrusted(path),
      headers: request.headers,
      body,
      json,
      signature,
      reason,
      status,
      answer: answerText,
      captured: wantsCapture && captureError === undefined,
      captureError,
      forwarded,
      filtered: decision.kind === "filtered",
      unrouted: decision.kind === "unrouted",
    });
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => void respond(request, Buffer.concat(chunks), response));
  });
  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await Promise.race([once(server, "listening"), once(server, "error").then(([error]) => Promise.reject(error))]);
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/`,
    port,
    captureStopped,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
      capture?.close();
    },
  };
}

/** The status and answer a request gets from its checks alone: 405, 401, 400, or `status`. */
function firstAnswer(method: string, signature: SignatureCheck, signatureName: string, parsed: ParsedJson, status: number): [number, unknown] {
  if (method !== "POST") return [405, { error: "only POST is accepted" }];
  if (refused(signature)) return [401, { error: `${signature} ${signatureName}` }];
  if (!parsed.ok) return [400, { error: `the body is not JSON: ${parsed.error}` }];
  return [status, { ok: true }];
}

/**
 * Appends one request's capture lines. When they could not be written, the error, and whether
 * capturing is over: it is, unless the disk was full (space can come back; the file was cut back
 * to its last whole record).
 */
function writeCapture(capture: AppendFile, lines: readonly string[]): { error: OutputWriteError; fatal: boolean } | undefined {
  if (!capture.isStillAtPath())
    return { error: new OutputWriteError(`could not write --out ${capture.path}: the file was removed or replaced while wh listened`), fatal: true };
  capture.append(`${lines.join("\n")}\n`);
  try {
    capture.flush();
    return undefined;
  } catch (error) {
    if (!(error instanceof OutputWriteError)) throw error;
    const code = (error.cause as NodeJS.ErrnoException | undefined)?.code;
    return { error, fatal: capture.broken !== undefined || !SPACE_ERRORS.has(code ?? "") };
  }
}

function refused(signature: SignatureCheck): boolean {
  return signature === "invalid" || signature === "missing";
}

function signatureHeader(headers: IncomingHttpHeaders): string | undefined {
  const header = headers[SIGNATURE_HEADER.toLowerCase()];
  return typeof header === "string" ? header : undefined;
}

/** A request's verdict under the receiver's secret and scheme, and why a refused one was refused. */
function checkSignature(options: ReceiverOptions, headers: IncomingHttpHeaders, body: Buffer, nowMs: number): { signature: SignatureCheck; reason?: string } {
  const { secret } = options;
  if (secret === undefined) return { signature: "unchecked" };
  if (options.scheme === "standard") {
    const value = (name: string): string | undefined => (typeof headers[name] === "string" ? headers[name] : undefined);
    const values = { id: value(WEBHOOK_ID_HEADER), timestamp: value(WEBHOOK_TIMESTAMP_HEADER), signature: value(WEBHOOK_SIGNATURE_HEADER) };
    const verdict = verifyStandard(secret, values, body, { nowMs, toleranceSeconds: options.toleranceSeconds });
    if (verdict.ok) return { signature: "valid" };
    return { signature: verdict.reason === "missing-signature" ? "missing" : "invalid", reason: STANDARD_FAILURES[verdict.reason] };
  }
  const header = signatureHeader(headers);
  const verdict = header === undefined ? undefined : verifyBody(secret, body, header);
  if (verdict?.ok === true) return { signature: verdict.kind === "batch" ? "valid-batch" : "valid" };
  return { signature: header === undefined ? "missing" : "invalid", reason: refusalReason(secret, body, header) };
}

/**
 * Sends requests on to the app under development, one attempt each, to exactly the URL given
 * (whatever path they came to, as `stripe listen --forward-to` does), and keeps what it answered.
 * undici is loaded on the first request forwarded: a receiver that forwards nothing never loads it.
 */
function createForwarder(): (url: string, method: string, headers: IncomingHttpHeaders, body: Buffer) => Promise<ForwardResult> {
  let undici: Promise<typeof import("undici")> | undefined;
  return async (url, method, headers, body) => {
    undici ??= import("undici");
    const { request } = await undici;
    // What the sender's answer, the output and the page say of it: credentials masked.
    const shown = redactUrlText(url);
    const started = Date.now();
    try {
      const answer = await request(url, { method: method as "POST", headers: forwardableHeaders(headers), body, headersTimeout: 30_000, bodyTimeout: 30_000 });
      const text = await answer.body.text();
      const answerHeaders = forwardableHeaders(answer.headers as IncomingHttpHeaders);
      return { url: shown, status: answer.statusCode, headers: answerHeaders, body: text, durationMs: Date.now() - started };
    } catch (error) {
      // The message can quote what the app answered (a malformed header, say).
      return { url: shown, error: untrusted((error as Error).message), durationMs: Date.now() - started };
    }
  };
}
