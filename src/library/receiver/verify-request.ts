import { UsageError } from "../../core/errors.js";
import { parseJson } from "../../core/message/parse-json.js";
import { verifySignature } from "../../core/sign.js";
import { type CheckedSigning, checkSettings, checkSigning, describeValue, SIGNING_OPTION_NAMES } from "./options.js";
import { type SigningScheme, verifyStandard, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from "../../core/standard-webhooks.js";

/** Request headers as node:http, Express and Fastify give them, or a fetch `Headers`. */
export type RequestHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyRequestInput<Batches extends boolean = false> {
  /** The raw body bytes as they arrived (not `JSON.stringify` of a parsed body: that is not what was signed). */
  body: Uint8Array | string;
  headers: RequestHeaders;
  secret: string;
  /** Accept Actions batches, whose signature covers their first event only (see WebhookOptions). */
  batches?: Batches | undefined;
  /** segment (default): X-Signature; standard: Standard Webhooks' three headers and a `whsec_` secret (see WebhookOptions). */
  scheme?: SigningScheme | undefined;
  /** scheme standard: seconds webhook-timestamp may be from now, either way (default 300). */
  toleranceSeconds?: number | undefined;
}

/**
 * Why a request is refused: its signature (401); its JSON, an array body on a route that takes no
 * batches, or a body the client stopped sending (400); its size (413).
 */
export type RejectReason =
  | "missing-signature"
  | "malformed-signature"
  | "mismatch"
  | "timestamp-too-old"
  | "timestamp-too-new"
  | "invalid-json"
  | "batch-refused"
  | "aborted"
  | "too-large";

/** One event whose signature covers the whole body. */
export interface SingleWebhook {
  kind: "single";
  /** The parsed JSON, every byte of it signed. */
  body: unknown;
  /** The bytes that were verified. */
  raw: Uint8Array;
}

/**
 * An Actions batch (only with `batches: true`). Segment signs a batch over its first event alone:
 * `signed` is that event; `unsigned` holds the others, which the signature does NOT cover. Anyone
 * who has seen one signed event can send it with any events of their own after it: treat
 * `unsigned` as the sender's word, not Segment's.
 */
export interface BatchWebhook {
  kind: "batch";
  /** The first event, the one the signature covers. */
  signed: unknown;
  /** The other events: not covered by the signature, anyone could have added them. */
  unsigned: unknown[];
  /** The bytes received (of which only the first event is signed). */
  raw: Uint8Array;
}

/** What a verified request is: one signed event, or, where batches are accepted, a batch too. */
export type VerifiedWebhook<Batches extends boolean = boolean> = Batches extends true ? SingleWebhook | BatchWebhook : SingleWebhook;

export type Rejected = { ok: false; status: 400 | 401 | 413; reason: RejectReason };

export type RequestVerdict<Batches extends boolean = boolean> = { ok: true; webhook: VerifiedWebhook<Batches> } | Rejected;

const refused = (status: Rejected["status"], reason: RejectReason): Rejected => ({ ok: false, status, reason });
export const TOO_LARGE = refused(413, "too-large");
export const ABORTED = refused(400, "aborted");

/** What each refusal is, in a few words. */
export const REJECTED: Record<RejectReason, string> = {
  "missing-signature": "invalid signature",
  "malformed-signature": "invalid signature",
  mismatch: "invalid signature",
  "timestamp-too-old": "timestamp too old",
  "timestamp-too-new": "timestamp too new",
  "invalid-json": "invalid JSON body",
  "batch-refused": "batch not accepted",
  aborted: "request body incomplete",
  "too-large": "body too large",
};

/** What a refused request is answered: its status, and a short JSON reason (nothing of the request in it). */
export function rejection({ status, reason }: Rejected): { status: number; body: string } {
  return { status, body: JSON.stringify({ error: REJECTED[reason], reason }) };
}

const INPUT_NAMES = ["body", "headers", ...SIGNING_OPTION_NAMES];

/**
 * Checks a request as Segment's Webhooks destinations sign it: X-Signature, the hex HMAC-SHA1 of
 * the raw body, compared in constant time; then the body is parsed. With `scheme: "standard"`, as
 * Standard Webhooks signs it (webhook-id, webhook-timestamp within `toleranceSeconds`,
 * webhook-signature; refused 401 with the reason, timestamp-too-old among them). Nothing of the request is
 * trusted, or parsed, before the signature holds. An array body is refused (400 batch-refused)
 * unless `batches` is true: then an Actions batch, signed over its first event only, passes as a
 * BatchWebhook that keeps the unsigned events apart. A missing or empty secret throws.
 */
export function verifyRequest<Batches extends boolean = false>(input: VerifyRequestInput<Batches>): RequestVerdict<Batches> {
  const given = checkSettings(input, "verifyRequest input", INPUT_NAMES);
  const body = given.body;
  if (typeof body !== "string" && !(body instanceof Uint8Array))
    throw new UsageError(`body must be the raw body as it arrived, a string or a Uint8Array (got ${describeValue(body)})`);
  const headers = given.headers;
  if (!(headers instanceof Headers) && (typeof headers !== "object" || headers === null || Array.isArray(headers)))
    throw new UsageError(`headers must be a Headers or an object of header values by name (got ${describeValue(headers)})`);
  return verifyBytes(typeof body === "string" ? Buffer.from(body, "utf8") : body, headers as RequestHeaders, checkSigning(given)) as RequestVerdict<Batches>;
}

/** verifyRequest for what the adapters read, their options checked when they were made. */
export function verifyBytes(raw: Uint8Array, headers: RequestHeaders, options: CheckedSigning): RequestVerdict {
  if (options.scheme === "standard") return verifyStandardBytes(raw, headers, options);
  const { secret, batches } = options;
  const signature = headerOf(headers, "x-signature");
  if (signature === undefined) return refused(401, "missing-signature");
  const whole = verifySignature(secret, raw, signature);
  if (!whole.ok && whole.reason === "malformed-signature") return refused(401, whole.reason);
  // An array is a batch: refused unread by a route that takes none (a classic destination never sends one).
  const array = startsArray(raw);
  if (array && !batches) return refused(400, "batch-refused");
  if (whole.ok) {
    const parsed = parseJson(textOf(raw));
    return parsed.ok ? { ok: true, webhook: { kind: "single", body: parsed.value, raw } } : refused(400, "invalid-json");
  }
  return array ? verifyBatch(raw, signature, secret) : refused(401, "mismatch");
}

/**
 * A batch as Segment's Actions destination signs it: the compact JSON of its first event
 * (segmentio/action-destinations, destinations/webhook/index.ts, extendRequest). Finding that
 * event means parsing the body unverified: the price of accepting batches.
 */
function verifyBatch(raw: Uint8Array, signature: string, secret: string): RequestVerdict {
  const parsed = parseJson(textOf(raw));
  if (!parsed.ok || !Array.isArray(parsed.value) || parsed.value.length === 0) return refused(401, "mismatch");
  const [signed, ...unsigned] = parsed.value as unknown[];
  if (!verifySignature(secret, JSON.stringify(signed), signature).ok) return refused(401, "mismatch");
  return { ok: true, webhook: { kind: "batch", signed, unsigned, raw } };
}

/**
 * A request as Standard Webhooks signs it: the three headers, the timestamp within the tolerance
 * of now, the whole body (a batch's too: every event is signed, so an array is one webhook, on a
 * route with `batches: true`).
 */
function verifyStandardBytes(raw: Uint8Array, headers: RequestHeaders, { secret, batches, toleranceSeconds }: CheckedSigning): RequestVerdict {
  const values = {
    id: standardHeader(headers, WEBHOOK_ID_HEADER),
    timestamp: standardHeader(headers, WEBHOOK_TIMESTAMP_HEADER),
    signature: standardHeader(headers, WEBHOOK_SIGNATURE_HEADER),
  };
  const verdict = verifyStandard(secret, values, raw, { nowMs: Date.now(), toleranceSeconds });
  if (!verdict.ok) return refused(401, verdict.reason);
  if (startsArray(raw) && !batches) return refused(400, "batch-refused");
  const parsed = parseJson(textOf(raw));
  return parsed.ok ? { ok: true, webhook: { kind: "single", body: parsed.value, raw } } : refused(400, "invalid-json");
}

/** The bytes as UTF-8 text: a Buffer (as node:http and the adapters read it) decodes itself, without a view made of it. */
function textOf(raw: Uint8Array): string {
  return (Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)).toString("utf8");
}

/** Whether a JSON text is an array: its first byte past JSON's whitespace is "[". Nothing is parsed. */
function startsArray(raw: Uint8Array): boolean {
  for (const byte of raw) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return byte === 0x5b;
  }
  return false;
}

/** One header's value as given, its name in any case: a string, a list, or undefined. */
function rawHeader(headers: RequestHeaders, name: string): unknown {
  const key = headers instanceof Headers ? undefined : Object.keys(headers).find((each) => each.toLowerCase() === name);
  const value: unknown = headers instanceof Headers ? headers.get(name) : key === undefined ? undefined : headers[key];
  return value === null ? undefined : value;
}

/** One header's value, its name in any case. Several of it is no valid signature (an empty one). */
function headerOf(headers: RequestHeaders, name: string): string | undefined {
  const value = rawHeader(headers, name);
  if (value === undefined) return undefined;
  // node:http and fetch join a repeated header with ", ".
  if (typeof value === "string") return value.includes(",") ? "" : value;
  return Array.isArray(value) && value.length === 1 && typeof value[0] === "string" ? value[0] : "";
}

/** A Standard Webhooks header: its value holds commas (`v1,…`); given several times, their values joined by spaces, as rotation lists them. */
function standardHeader(headers: RequestHeaders, name: string): string | undefined {
  const value = rawHeader(headers, name);
  if (value === undefined || typeof value === "string") return value;
  return Array.isArray(value) && value.every((each) => typeof each === "string") ? value.join(" ") : "";
}

/** The verified webhook of each request an adapter let through, by the request object. */
const verified = new WeakMap<object, VerifiedWebhook>();

/**
 * The webhook an adapter verified for this request (Express's or node:http's `req`, Fastify's
 * `request`, Hono's `c.req.raw`): a SingleWebhook (`body`), or, on a route with `batches: true`,
 * perhaps a BatchWebhook (`signed`, `unsigned`): check `kind`. Throws when none was verified.
 */
export function webhookOf(request: object): VerifiedWebhook {
  const webhook = typeof request === "object" && request !== null ? verified.get(request) : undefined;
  if (webhook === undefined) throw new UsageError("no verified webhook for this request: is the wh webhook middleware mounted on its route?");
  return webhook;
}

export function rememberWebhook(request: object, webhook: VerifiedWebhook): void {
  verified.set(request, webhook);
}
