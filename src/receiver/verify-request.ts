import { UsageError } from "../core/errors.js";
import { parseJson } from "../core/message/parse-json.js";
import { verifyBody } from "../core/sign.js";

/** Request headers as node:http, Express and Fastify give them, or a fetch `Headers`. */
export type RequestHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyRequestInput {
  /** The raw body bytes as they arrived (not `JSON.stringify` of a parsed body: that is not what was signed). */
  body: Uint8Array | string;
  headers: RequestHeaders;
  secret: string;
}

/** Why a request is refused: its signature (401), its JSON (400), or its size (413). */
export type RejectReason = "missing-signature" | "malformed-signature" | "mismatch" | "invalid-json" | "too-large";

/** A request whose X-Signature holds, with its body parsed. */
export interface VerifiedWebhook {
  /** The parsed JSON: one event, or an Actions batch (an array). */
  body: unknown;
  /** The bytes that were verified. */
  raw: Uint8Array;
  /** single: the signature covers the whole body. batch: an Actions batch, signed over its first event only. */
  kind: "single" | "batch";
}

export type RequestVerdict = { ok: true; webhook: VerifiedWebhook } | { ok: false; status: 400 | 401 | 413; reason: RejectReason };

export const TOO_LARGE: Rejected = { ok: false, status: 413, reason: "too-large" };

/** A body larger than this is refused unread (413) unless an adapter is given its own limit. */
export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024;

/** What every adapter takes. */
export interface WebhookOptions {
  /** The destination's shared secret. */
  secret: string;
  /** The largest body read (default 5 MiB); a larger one is answered 413. */
  maxBytes?: number | undefined;
}

/**
 * Checks a request as Segment's Webhooks destinations sign it: X-Signature, the hex HMAC-SHA1 of
 * the raw body (or, for an Actions batch, of its first event), compared in constant time; then the
 * body is parsed. Nothing of the request is trusted before the signature holds.
 */
export function verifyRequest({ body, headers, secret }: VerifyRequestInput): RequestVerdict {
  const signature = headerOf(headers, "x-signature");
  if (signature === undefined) return { ok: false, status: 401, reason: "missing-signature" };
  const verdict = verifyBody(secret, body, signature);
  if (!verdict.ok) return { ok: false, status: 401, reason: verdict.reason };
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const parsed = parseJson(typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"));
  if (!parsed.ok) return { ok: false, status: 400, reason: "invalid-json" };
  return { ok: true, webhook: { body: parsed.value, raw, kind: verdict.kind } };
}

/** One header's value, its name in any case. Several of it is no valid signature (an empty one). */
function headerOf(headers: RequestHeaders, name: string): string | undefined {
  const key = headers instanceof Headers ? undefined : Object.keys(headers).find((each) => each.toLowerCase() === name);
  const value = headers instanceof Headers ? headers.get(name) : key === undefined ? undefined : headers[key];
  if (value === null || value === undefined) return undefined;
  // node:http and fetch join a repeated header with ", ".
  if (typeof value === "string") return value.includes(",") ? "" : value;
  return value.length === 1 ? value[0] : "";
}

export type Rejected = Extract<RequestVerdict, { ok: false }>;

/** What each refusal is, in a word. */
export const REJECTED: Record<Rejected["status"], string> = { 400: "invalid JSON body", 401: "invalid signature", 413: "body too large" };

/** What a refused request is answered: its status, and a short JSON reason (nothing of the request in it). */
export function rejection({ status, reason }: Rejected): { status: number; body: string } {
  return { status, body: JSON.stringify({ error: REJECTED[status], reason }) };
}

/** The options, checked when the adapter is made: no secret must never mean "accept everything". */
export function checkOptions(options: WebhookOptions): Required<WebhookOptions> {
  if (typeof options?.secret !== "string" || options.secret === "")
    throw new UsageError("secret is missing or empty: a webhook receiver needs the destination's shared secret");
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!(maxBytes > 0)) throw new UsageError(`maxBytes must be a positive number of bytes (got ${String(options.maxBytes)})`);
  return { secret: options.secret, maxBytes };
}

/** The verified webhook of each request an adapter let through, by the request object. */
const verified = new WeakMap<object, VerifiedWebhook>();

/**
 * The webhook an adapter verified for this request (Express's or node:http's `req`, Fastify's
 * `request`, Hono's `c.req.raw`): its parsed body, raw bytes and kind. Throws when none did.
 */
export function webhookOf(request: object): VerifiedWebhook {
  const webhook = verified.get(request);
  if (webhook === undefined) throw new UsageError("no verified webhook for this request: is the wh webhook middleware mounted on its route?");
  return webhook;
}

export function rememberWebhook(request: object, webhook: VerifiedWebhook): void {
  verified.set(request, webhook);
}
