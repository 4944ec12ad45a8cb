import type { IncomingMessage, ServerResponse } from "node:http";
import { UsageError } from "../../core/errors.js";
import { declaredTooLarge, readBody } from "./body.js";
import { type CheckedOptions, checkHandler, checkOptions, describeValue, type WebhookOptions } from "./options.js";
import { type Rejected, type RequestVerdict, rejection, rememberWebhook, TOO_LARGE, type VerifiedWebhook, verifyBytes } from "./verify-request.js";

// node:http and Express (whose req and res are node:http's): the body read from the request
// stream, verified, then handed on. Types only from node:http: Express is never imported.

/** Reads and verifies a node:http request's body (see verifyRequest). */
export async function verifyNodeRequest<Batches extends boolean = false>(
  request: IncomingMessage,
  options: WebhookOptions<Batches>,
): Promise<RequestVerdict<Batches>> {
  const checked = checkOptions(options);
  const looksLikeRequest = typeof request === "object" && request !== null && typeof request.headers === "object" && Symbol.asyncIterator in request;
  if (!looksLikeRequest) throw new UsageError(`request must be a node:http IncomingMessage (got ${describeValue(request)})`);
  return (await verifyChecked(request, checked)) as RequestVerdict<Batches>;
}

async function verifyChecked(request: IncomingMessage, options: CheckedOptions): Promise<RequestVerdict> {
  if (declaredTooLarge(request.headers["content-length"], options.maxBytes)) return TOO_LARGE;
  const read = await readBody(request, options.maxBytes);
  return read.ok ? verifyBytes(read.bytes, request.headers, options) : read;
}

function refuse(response: ServerResponse, verdict: Rejected): void {
  // A client that hung up mid-body is answered nothing: there is no one to answer.
  if (verdict.reason === "aborted") return void response.destroy();
  const { status, body } = rejection(verdict);
  // A body left unread (413) cannot be drained safely: the connection is not kept.
  const headers = { "Content-Type": "application/json", ...(verdict.status === 413 ? { Connection: "close" } : {}) };
  response.writeHead(status, headers).end(body);
}

/**
 * A node:http request listener: a request whose X-Signature holds reaches `handler` with its
 * webhook; any other is answered 401 (400, 413) with a short JSON reason. With `batches: true` the
 * webhook may be a batch, its events after the first unsigned (see BatchWebhook).
 */
export function nodeWebhook<Batches extends boolean = false>(
  options: WebhookOptions<Batches>,
  handler: (webhook: VerifiedWebhook<Batches>, request: IncomingMessage, response: ServerResponse) => void | Promise<void>,
): (request: IncomingMessage, response: ServerResponse) => void {
  const checked = checkOptions(options);
  checkHandler(handler, "nodeWebhook");
  return (request, response) => {
    void (async () => {
      const verdict = await verifyChecked(request, checked);
      if (!verdict.ok) return refuse(response, verdict);
      rememberWebhook(request, verdict.webhook);
      await handler(verdict.webhook as VerifiedWebhook<Batches>, request, response);
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
 * A verified request goes on with `req.body` the parsed JSON (a batch's: the whole array, its
 * events after the first unsigned) and `webhookOf(req)` its webhook; any other is answered 401
 * (400, 413). After express.raw() it verifies the Buffer that left; after express.json() the raw
 * bytes are gone, and it says so (next(error)).
 */
export function expressWebhook<Batches extends boolean = false>(
  options: WebhookOptions<Batches>,
): (request: ExpressLikeRequest, response: ServerResponse, next: (error?: unknown) => void) => void {
  const checked = checkOptions(options);
  return (request, response, next) => {
    const verdict = (): Promise<RequestVerdict> | RequestVerdict => {
      if (Buffer.isBuffer(request.body)) return verifyBytes(request.body, request.headers, checked);
      if (request.body !== undefined || request.readableEnded) {
        throw new UsageError("the request body was parsed before the webhook middleware: mount it before express.json(), or use express.raw()");
      }
      return verifyChecked(request, checked);
    };
    void (async () => {
      const result = await verdict();
      if (!result.ok) return refuse(response, result);
      const { webhook } = result;
      request.body = webhook.kind === "single" ? webhook.body : [webhook.signed, ...webhook.unsigned];
      rememberWebhook(request, webhook);
      next();
    })().catch(next);
  };
}
