import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { captureLines } from "../core/capture.js";
import { explainMismatch } from "../core/explain-signature.js";
import { parseJson } from "../core/message/parse-json.js";
import { redactUrlText } from "../core/redact.js";
import { SIGNATURE_HEADER, verifyBody } from "../core/sign.js";
import { untrusted, type Untrusted } from "../core/untrusted.js";
import { openOutputFile } from "./output-file.js";

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
  /** For an invalid signature: what most likely went wrong (see `wh verify --explain`). */
  explanation: string | undefined;
  /** The status the receiver answered with. */
  status: number;
  /** The body of that answer, as text. */
  answer: string;
  /** Whether the body was appended to the capture file. */
  captured: boolean;
  /** With --forward-to: what the app answered (it is what the sender got), or why it could not. */
  forwarded?: ForwardResult | undefined;
}

export type ForwardResult = { url: string; status: number; headers: Record<string, string>; body: string; durationMs: number } | { url: string; error: Untrusted; durationMs: number };

export interface ReceiverOptions {
  host?: string | undefined;
  /** 0 (the default) picks a free port. */
  port?: number | undefined;
  /** When set, a request whose X-Signature does not match its raw bytes is answered 401. */
  secret?: string | undefined;
  /** The status for a request that passes the checks. Default 200. */
  status?: number | undefined;
  /** NDJSON file that every accepted request is appended to, as capture records (see core/capture). */
  out?: string | undefined;
  /** Each request that passes the checks is sent on here with its exact bytes and headers; its answer is the answer. */
  forwardTo?: string | undefined;
  onRequest?: (request: ReceivedRequest) => void;
}

export interface Receiver {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Headers that belong to one connection, not to the request: never forwarded. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length", "expect"]);

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
  // Opened (and checked) before listening, never through a symbolic link.
  const capture: WriteStream | undefined = options.out === undefined ? undefined : createWriteStream(options.out, { fd: openOutputFile(options.out, "--out", "append") });
  const forward = options.forwardTo === undefined ? undefined : await createForwarder(options.forwardTo);
  let lastId = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        const receivedAt = new Date();
        const body = Buffer.concat(chunks);
        const signature = checkSignature(options.secret, request.headers, body);
        const parsed = parseJson(body.toString("utf8"));
        const json = parsed.ok ? parsed.value : undefined;
        let status = options.status ?? 200;
        let answer: unknown = { ok: true };
        let headers: Record<string, string> = { "content-type": "application/json" };
        if (request.method !== "POST") [status, answer] = [405, { error: "only POST is accepted" }];
        else if (signature === "invalid" || signature === "missing") [status, answer] = [401, { error: `${signature} ${SIGNATURE_HEADER}` }];
        else if (!parsed.ok) [status, answer] = [400, { error: `the body is not JSON: ${parsed.error}` }];
        const accepted = request.method === "POST" && status !== 401 && status !== 400;
        const method = request.method ?? "";
        const path = request.url ?? "";
        const captured = capture !== undefined && accepted && (forward !== undefined || (status >= 200 && status < 300));
        if (captured) capture.write(`${captureLines({ receivedAt, method, path, headers: request.headers, body }, json).join("\n")}\n`);
        let forwarded: ForwardResult | undefined;
        let answerText = JSON.stringify(answer);
        if (forward !== undefined && accepted) {
          forwarded = await forward(method, request.headers, body);
          if ("error" in forwarded) [status, answerText] = [502, JSON.stringify({ error: `could not forward to ${forwarded.url}: ${forwarded.error.unsafeRaw()}` })];
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
          explanation: signature === "invalid" && options.secret !== undefined ? explainMismatch(options.secret, body, String(request.headers[SIGNATURE_HEADER.toLowerCase()])) : undefined,
          status,
          answer: answerText,
          captured,
          forwarded,
        });
      })();
    });
  });
  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await Promise.race([once(server, "listening"), once(server, "error").then(([error]) => Promise.reject(error))]);
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/`,
    port,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
      if (capture !== undefined) await new Promise((resolve) => capture.end(resolve));
    },
  };
}

function checkSignature(secret: string | undefined, headers: IncomingHttpHeaders, body: Buffer): SignatureCheck {
  if (secret === undefined) return "unchecked";
  const header = headers[SIGNATURE_HEADER.toLowerCase()];
  if (typeof header !== "string") return "missing";
  const verdict = verifyBody(secret, body, header);
  return verdict.ok ? (verdict.kind === "batch" ? "valid-batch" : "valid") : "invalid";
}

/**
 * Sends requests on to the app under development, one attempt each, to exactly `url` (whatever
 * path they came to, as `stripe listen --forward-to` does), and keeps what it answered.
 */
async function createForwarder(url: string): Promise<(method: string, headers: IncomingHttpHeaders, body: Buffer) => Promise<ForwardResult>> {
  const { request } = await import("undici");
  // What the sender's answer, the output and the page say of it: credentials masked.
  const shown = redactUrlText(url);
  return async (method, headers, body) => {
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
