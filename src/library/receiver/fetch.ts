import { UsageError } from "../../core/errors.js";
import { declaredTooLarge, readBody } from "./body.js";
import { type CheckedOptions, checkHandler, checkOptions, describeValue, type WebhookOptions } from "./options.js";
import { type Rejected, type RequestVerdict, rejection, rememberWebhook, TOO_LARGE, type VerifiedWebhook, verifyBytes } from "./verify-request.js";

// The web's Request and Response (Next.js App Router route handlers, Hono, any fetch-style
// server): types from the platform only, so neither framework is imported.

/** Reads and verifies a fetch Request's body (see verifyRequest). The request's body is consumed. */
export async function verifyFetchRequest<Batches extends boolean = false>(
  request: Request,
  options: WebhookOptions<Batches>,
): Promise<RequestVerdict<Batches>> {
  const checked = checkOptions(options);
  checkRequest(request);
  return (await readAndVerify(request, checked)).verdict as RequestVerdict<Batches>;
}

/** A Request from any realm (Next's NextRequest, undici's, a polyfill's): its headers and body are what is used. */
function checkRequest(request: unknown): void {
  const candidate = request as Partial<Request> | null;
  const body = candidate?.body;
  const isRequest =
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.headers?.get === "function" &&
    (body === null || typeof body?.getReader === "function");
  if (!isRequest) throw new UsageError(`request must be a fetch Request (got ${describeValue(request)})`);
}

/** The verdict, and the bytes read (for Hono, whose handler reads the body again). */
async function readAndVerify(request: Request, options: CheckedOptions): Promise<{ verdict: RequestVerdict; bytes?: Buffer }> {
  if (declaredTooLarge(request.headers.get("content-length"), options.maxBytes)) return { verdict: TOO_LARGE };
  const read = request.body === null ? { ok: true as const, bytes: Buffer.alloc(0) } : await readBody(request.body, options.maxBytes);
  if (!read.ok) return { verdict: read };
  return { verdict: verifyBytes(read.bytes, request.headers, options), bytes: read.bytes };
}

function refusal(verdict: Rejected): Response {
  const { status, body } = rejection(verdict);
  // A body left unread (413) is not drained: the connection is not kept.
  const headers = { "Content-Type": "application/json", ...(verdict.status === 413 ? { Connection: "close" } : {}) };
  return new Response(body, { status, headers });
}

/**
 * A Next.js App Router route handler (`export const POST = nextWebhook(...)`), or any
 * `(request: Request) => Response` server: `handler` gets the verified webhook; any other request
 * is answered 401 (400, 413) with a short JSON reason. The request keeps its type (Next's
 * NextRequest), and Next's second argument (the route's params) is handed on. With
 * `batches: true` the webhook may be a batch, its events after the first unsigned (see BatchWebhook).
 */
export function nextWebhook<R extends Request = Request, Context = unknown, Batches extends boolean = false>(
  options: WebhookOptions<Batches>,
  handler: (webhook: VerifiedWebhook<Batches>, request: R, context: Context) => Response | Promise<Response>,
): (request: R, context: Context) => Promise<Response> {
  const checked = checkOptions(options);
  checkHandler(handler, "nextWebhook");
  return async (request, context) => {
    const { verdict } = await readAndVerify(request, checked);
    if (!verdict.ok) return refusal(verdict);
    rememberWebhook(request, verdict.webhook);
    return handler(verdict.webhook as VerifiedWebhook<Batches>, request, context);
  };
}

/** What the Hono middleware needs of Hono's Context. */
export interface HonoLikeContext {
  req: { raw: Request };
}

/**
 * Hono middleware (`app.post("/hook", honoWebhook({ secret }), handler)`): a verified request goes
 * on, `webhookOf(c.req.raw)` its webhook, and `await c.req.json()` still works (a batch's: the
 * whole array, its events after the first unsigned); any other is answered 401 (400, 413) with a
 * short JSON reason. The body is read here, with the limit (Hono's own reader has none).
 */
export function honoWebhook<Batches extends boolean = false>(
  options: WebhookOptions<Batches>,
): (context: HonoLikeContext, next: () => Promise<void>) => Promise<Response | undefined> {
  const checked = checkOptions(options);
  return async (context, next) => {
    const { verdict, bytes } = await readAndVerify(context.req.raw, checked);
    if (!verdict.ok) return refusal(verdict);
    // The bytes read, handed back as Hono's bodyLimit middleware does: c.req.json() reads them.
    context.req.raw = new Request(context.req.raw, {
      body: bytes == null ? null : new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength),
    });
    rememberWebhook(context.req.raw, verdict.webhook);
    await next();
    return undefined;
  };
}
