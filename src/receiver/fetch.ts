import { readRawBody } from "./node.js";
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

// The web's Request and Response (Next.js App Router route handlers, Hono, any fetch-style
// server): types from the platform only, so neither framework is imported.

/** Reads and verifies a fetch Request's body (see verifyRequest). The request's body is consumed. */
export async function verifyFetchRequest(request: Request, options: WebhookOptions): Promise<RequestVerdict> {
  const { secret, maxBytes } = checkOptions(options);
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return TOO_LARGE;
  const raw = request.body === null ? Buffer.alloc(0) : await readRawBody(request.body, maxBytes);
  return raw === undefined ? TOO_LARGE : verifyRequest({ body: raw, headers: request.headers, secret });
}

function refusal(verdict: Rejected): Response {
  const { status, body } = rejection(verdict);
  return new Response(body, { status, headers: { "Content-Type": "application/json" } });
}

/**
 * A Next.js App Router route handler (`export const POST = nextWebhook(...)`), or any
 * `(request: Request) => Response` server: `handler` gets the verified webhook; any other request
 * is answered 401 (400, 413) with a short JSON reason. The request keeps its type (Next's
 * NextRequest), and Next's second argument (the route's params) is handed on.
 */
export function nextWebhook<R extends Request = Request, Context = unknown>(
  options: WebhookOptions,
  handler: (webhook: VerifiedWebhook, request: R, context: Context) => Response | Promise<Response>,
): (request: R, context: Context) => Promise<Response> {
  const checked = checkOptions(options);
  return async (request, context) => {
    const verdict = await verifyFetchRequest(request, checked);
    if (!verdict.ok) return refusal(verdict);
    rememberWebhook(request, verdict.webhook);
    return handler(verdict.webhook, request, context);
  };
}

/** What the Hono middleware needs of Hono's Context. */
export interface HonoLikeContext {
  req: { raw: Request; arrayBuffer(): Promise<ArrayBuffer> };
}

/**
 * Hono middleware (`app.post("/hook", honoWebhook({ secret }), handler)`): a verified request goes
 * on, `webhookOf(c.req.raw)` its webhook, and `await c.req.json()` still works (Hono keeps the
 * body it read); any other is answered 401 (400, 413) with a short JSON reason.
 */
export function honoWebhook(options: WebhookOptions): (context: HonoLikeContext, next: () => Promise<void>) => Promise<Response | undefined> {
  const checked = checkOptions(options);
  return async (context, next) => {
    const verdict = await verifyHonoRequest(context, checked);
    if (!verdict.ok) return refusal(verdict);
    rememberWebhook(context.req.raw, verdict.webhook);
    await next();
    return undefined;
  };
}

/** Through Hono's own body reader, which keeps the bytes for the handler's c.req.json(). */
async function verifyHonoRequest(context: HonoLikeContext, options: Required<WebhookOptions>): Promise<RequestVerdict> {
  // Hono reads the whole body (its reader has no limit): a declared length over the limit is refused unread.
  if (Number(context.req.raw.headers.get("content-length") ?? 0) > options.maxBytes) return TOO_LARGE;
  const raw = new Uint8Array(await context.req.arrayBuffer());
  if (raw.byteLength > options.maxBytes) return TOO_LARGE;
  return verifyRequest({ body: raw, headers: context.req.raw.headers, secret: options.secret });
}
