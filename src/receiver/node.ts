import type { IncomingMessage, ServerResponse } from "node:http";
import { UsageError } from "../core/errors.js";
import {
  checkOptions,
  type Rejected,
  rejection,
  type RequestVerdict,
  rememberWebhook,
  TOO_LARGE,
  type VerifiedWebhook,
  verifyRequest,
  type WebhookOptions,
} from "./verify-request.js";

// node:http and Express (whose req and res are node:http's): the body read from the request
// stream, verified, then handed on. Types only from node:http: Express is never imported.

/** The bytes of a body, up to `maxBytes`; undefined when it is larger (the rest is left unread). */
export async function readRawBody(body: AsyncIterable<Uint8Array | string>, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size += bytes.byteLength;
    if (size > maxBytes) return undefined;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, size);
}

/** A declared Content-Length over the limit: refused before a byte is read. */
function declaredTooLarge(request: IncomingMessage, maxBytes: number): boolean {
  return Number(request.headers["content-length"] ?? 0) > maxBytes;
}

/** Reads and verifies a node:http request's body (see verifyRequest). */
export async function verifyNodeRequest(request: IncomingMessage, options: WebhookOptions): Promise<RequestVerdict> {
  const { secret, maxBytes } = checkOptions(options);
  const raw = declaredTooLarge(request, maxBytes) ? undefined : await readRawBody(request, maxBytes);
  return raw === undefined ? TOO_LARGE : verifyRequest({ body: raw, headers: request.headers, secret });
}

function refuse(response: ServerResponse, verdict: Rejected): void {
  const { status, body } = rejection(verdict);
  // A body left unread (413) cannot be drained safely: the connection is not kept.
  const headers = { "Content-Type": "application/json", ...(verdict.status === 413 ? { Connection: "close" } : {}) };
  response.writeHead(status, headers).end(body);
}

/**
 * A node:http request listener: a request whose X-Signature holds reaches `handler` with its
 * webhook (parsed body, raw bytes, kind); any other is answered 401 (400, 413) with a short JSON reason.
 */
export function nodeWebhook(
  options: WebhookOptions,
  handler: (webhook: VerifiedWebhook, request: IncomingMessage, response: ServerResponse) => void | Promise<void>,
): (request: IncomingMessage, response: ServerResponse) => void {
  const checked = checkOptions(options);
  return (request, response) => {
    void (async () => {
      const verdict = await verifyNodeRequest(request, checked);
      if (!verdict.ok) return refuse(response, verdict);
      rememberWebhook(request, verdict.webhook);
      await handler(verdict.webhook, request, response);
    })().catch((error: unknown) => {
      // The app's own failure: a 500 when nothing was answered yet, and the error for the process's handlers.
      if (!response.headersSent) response.writeHead(500).end();
      process.emitWarning(error instanceof Error ? error : String(error));
    });
  };
}

/** What the Express middleware needs of a request: node:http's, with what body parsers set. */
export type ExpressLikeRequest = IncomingMessage & { body?: unknown };

/**
 * Express middleware: mount it on the webhook's route, before (or instead of) express.json().
 * A verified request goes on with `req.body` the parsed JSON (and `webhookOf(req)` its raw bytes
 * and kind); any other is answered 401 (400, 413). After express.raw() it verifies the Buffer
 * that left; after express.json() the raw bytes are gone, and it says so (next(error)).
 */
export function expressWebhook(options: WebhookOptions): (request: ExpressLikeRequest, response: ServerResponse, next: (error?: unknown) => void) => void {
  const checked = checkOptions(options);
  return (request, response, next) => {
    const verdict = (): Promise<RequestVerdict> | RequestVerdict => {
      if (Buffer.isBuffer(request.body)) return verifyRequest({ body: request.body, headers: request.headers, secret: checked.secret });
      if (request.body !== undefined || request.readableEnded) {
        throw new UsageError("the request body was parsed before the webhook middleware: mount it before express.json(), or use express.raw()");
      }
      return verifyNodeRequest(request, checked);
    };
    void (async () => {
      const result = await verdict();
      if (!result.ok) return refuse(response, result);
      request.body = result.webhook.body;
      rememberWebhook(request, result.webhook);
      next();
    })().catch(next);
  };
}
