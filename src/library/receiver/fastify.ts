import { Readable } from "node:stream";
import { declaredTooLarge, readBody } from "./body.js";
import { checkOptions, type WebhookOptions } from "./options.js";
import { REJECTED, type Rejected, type RequestHeaders, rememberWebhook, TOO_LARGE, verifyBytes } from "./verify-request.js";

// Fastify parses a JSON body itself, keeping no bytes of it. A route-level preParsing hook sees the
// payload stream before that: it reads the raw bytes, verifies them, and hands Fastify the same
// bytes to parse. Fastify is never imported: the hook's types are structural.

/** What the hook needs of Fastify's request and reply. */
export interface FastifyLikeRequest {
  headers: Exclude<RequestHeaders, Headers>;
}
export interface FastifyLikeReply {
  header(name: string, value: string): unknown;
}

/** A refused request, thrown as Fastify expects: its statusCode is the answer's. */
export class WebhookRejection extends Error {
  readonly statusCode: Rejected["status"];
  readonly reason: Rejected["reason"];

  constructor({ status, reason }: Rejected) {
    super(`${REJECTED[reason]} (${reason})`);
    this.statusCode = status;
    this.reason = reason;
  }
}

/**
 * Route options for Fastify (`app.post("/hook", fastifyWebhook({ secret }), handler)`, or spread
 * beside your own): a verified request reaches the handler with `request.body` parsed by Fastify
 * (a batch's: the whole array, its events after the first unsigned) and `webhookOf(request)` its
 * webhook; any other ends in a WebhookRejection, which Fastify's error handler answers with its
 * statusCode (401, 400, 413) and message. The route's bodyLimit is maxBytes: Fastify's own default
 * (1 MiB) would refuse a verified body between the two.
 */
export function fastifyWebhook<Batches extends boolean = false>(
  options: WebhookOptions<Batches>,
): {
  bodyLimit: number;
  preParsing: (request: FastifyLikeRequest, reply: FastifyLikeReply, payload: AsyncIterable<Uint8Array | string>) => Promise<Readable>;
} {
  const checked = checkOptions(options);
  return {
    bodyLimit: checked.maxBytes,
    async preParsing(request, reply, payload) {
      // Fastify's own limit is checked after this hook, and by default lower (1 MiB): the declared length is checked here.
      const read = declaredTooLarge(request.headers["content-length"], checked.maxBytes) ? TOO_LARGE : await readBody(payload, checked.maxBytes);
      if (!read.ok) {
        // The rest of the body is left unread: the connection cannot serve another request.
        if (read.status === 413) reply.header("Connection", "close");
        throw new WebhookRejection(read);
      }
      const verdict = verifyBytes(read.bytes, request.headers, checked);
      if (!verdict.ok) throw new WebhookRejection(verdict);
      rememberWebhook(request, verdict.webhook);
      // Fastify matches the bytes it parses to Content-Length by this property.
      return Object.assign(Readable.from([read.bytes]), { receivedEncodedLength: read.bytes.byteLength });
    },
  };
}
