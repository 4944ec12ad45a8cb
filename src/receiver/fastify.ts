import { Readable } from "node:stream";
import { readRawBody } from "./node.js";
import {
  checkOptions,
  REJECTED,
  type Rejected,
  rememberWebhook,
  TOO_LARGE,
  verifyRequest,
  type RequestHeaders,
  type WebhookOptions,
} from "./verify-request.js";

// Fastify parses a JSON body itself, keeping no bytes of it. A route-level preParsing hook sees the
// payload stream before that: it reads the raw bytes, verifies them, and hands Fastify the same
// bytes to parse. Fastify is never imported: the hook's types are structural.

/** What the hook needs of Fastify's request and reply. */
export interface FastifyLikeRequest {
  headers: RequestHeaders;
}
export interface FastifyLikeReply {
  header(name: string, value: string): unknown;
}

/** A refused request, thrown as Fastify expects: its statusCode is the answer's. */
export class WebhookRejection extends Error {
  readonly statusCode: Rejected["status"];
  readonly reason: Rejected["reason"];

  constructor({ status, reason }: Rejected) {
    super(`${REJECTED[status]} (${reason})`);
    this.statusCode = status;
    this.reason = reason;
  }
}

/**
 * Route options for Fastify (`app.post("/hook", fastifyWebhook({ secret }), handler)`, or spread
 * beside your own): a verified request reaches the handler with `request.body` parsed by Fastify
 * and `webhookOf(request)` its raw bytes and kind; any other ends in a WebhookRejection, which
 * Fastify's error handler answers with its statusCode (401, 400, 413) and message.
 */
export function fastifyWebhook(options: WebhookOptions): {
  preParsing: (request: FastifyLikeRequest, reply: FastifyLikeReply, payload: AsyncIterable<Uint8Array | string>) => Promise<Readable>;
} {
  const { secret, maxBytes } = checkOptions(options);
  return {
    async preParsing(request, reply, payload) {
      const raw = await readRawBody(payload, maxBytes);
      if (raw === undefined) {
        // The rest of the body is left unread: the connection cannot serve another request.
        reply.header("Connection", "close");
        throw new WebhookRejection(TOO_LARGE);
      }
      const verdict = verifyRequest({ body: raw, headers: request.headers, secret });
      if (!verdict.ok) throw new WebhookRejection(verdict);
      rememberWebhook(request, verdict.webhook);
      // Fastify matches the bytes it parses to Content-Length by this property.
      return Object.assign(Readable.from([raw]), { receivedEncodedLength: raw.byteLength });
    },
  };
}
