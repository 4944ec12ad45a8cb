import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { SIGNATURE_HEADER, verifyBody } from "../core/sign.js";
import { openOutputFile } from "./output-file.js";

/** valid-batch: a batch body signed over its first event, as Segment's Actions destination signs. */
export type SignatureCheck = "valid" | "valid-batch" | "invalid" | "missing" | "unchecked";

export interface ReceivedRequest {
  receivedAt: Date;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, exactly as they arrived. */
  body: Buffer;
  /** The parsed body, when it is JSON. */
  json: unknown;
  signature: SignatureCheck;
  /** The status the receiver answered with. */
  status: number;
  /** Whether the body was appended to the capture file. */
  captured: boolean;
}

export interface ReceiverOptions {
  host?: string | undefined;
  /** 0 (the default) picks a free port. */
  port?: number | undefined;
  /** When set, a request whose X-Signature does not match its raw bytes is answered 401. */
  secret?: string | undefined;
  /** The status for a request that passes the checks. Default 200. */
  status?: number | undefined;
  /** NDJSON file that every 2xx-answered JSON body is appended to, one per line. */
  out?: string | undefined;
  onRequest?: (request: ReceivedRequest) => void;
}

export interface Receiver {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The local webhook receiver behind `wh listen`, the demo and the tests of the CLI. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  // Opened (and checked) before listening, never through a symbolic link.
  const capture: WriteStream | undefined = options.out === undefined ? undefined : createWriteStream(options.out, { fd: openOutputFile(options.out, "--out", "append") });
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const signature = checkSignature(options.secret, request.headers, body);
      const json = parseJson(body);
      let status = options.status ?? 200;
      let answer: unknown = { ok: true };
      if (request.method !== "POST") [status, answer] = [405, { error: "only POST is accepted" }];
      else if (signature === "invalid" || signature === "missing") [status, answer] = [401, { error: `${signature} ${SIGNATURE_HEADER}` }];
      else if (json === undefined) [status, answer] = [400, { error: "the body is not JSON" }];
      const captured = capture !== undefined && status >= 200 && status < 300;
      if (captured) capture.write(`${toLine(body, json)}\n`);
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer));
      options.onRequest?.({
        receivedAt: new Date(),
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body,
        json,
        signature,
        status,
        captured,
      });
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

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/**
 * The capture keeps the exact bytes when they fit on one line; a multi-line body is compacted; a
 * batch (a JSON array) becomes one line per event, so that `wh replay` can send them again.
 */
function toLine(body: Buffer, json: unknown): string {
  if (Array.isArray(json)) return json.map((event) => JSON.stringify(event)).join("\n");
  const text = body.toString("utf8");
  return /[\r\n]/.test(text) ? JSON.stringify(json) : text;
}
