import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { isBody, requireArgument } from "./arguments.js";
import { UsageError } from "./errors.js";

// Standard Webhooks (standard-webhooks/standard-webhooks, spec/standard-webhooks.md), the scheme
// Svix and the providers that adopted it sign with: three headers, the signed content
// `${webhook-id}.${webhook-timestamp}.${body}`, HMAC-SHA256 keyed with the base64-decoded bytes of
// a `whsec_` secret, the signature `v1,<base64>`, several signatures space-delimited (key
// rotation), the timestamp in whole seconds and checked against a tolerance (replays). Pure: the
// time is a parameter.

/** How a destination signs: Segment's X-Signature (the default), or Standard Webhooks. */
export type SigningScheme = "segment" | "standard";
export const SIGNING_SCHEMES: readonly SigningScheme[] = ["segment", "standard"];

export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

/** The tolerance of the reference libraries (standardwebhooks, svix): 5 minutes either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = "whsec_";
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Why a string is not a Standard Webhooks secret, or undefined when it is one. During a key
 * rotation it may hold several, space-separated (`whsec_new whsec_old`): each signs (the
 * header lists every signature), and a signature by any of them verifies.
 */
export function standardSecretProblem(secret: string): string | undefined {
  for (const each of secret.split(" ")) {
    if (!each.startsWith(SECRET_PREFIX)) return "a Standard Webhooks secret starts with whsec_ (then base64)";
    const encoded = each.slice(SECRET_PREFIX.length);
    if (encoded === "" || !BASE64.test(encoded)) return "a Standard Webhooks secret is whsec_ followed by base64 (A-Z, a-z, 0-9, + and /, = padding)";
  }
  return undefined;
}

/** The key bytes of each `whsec_` secret of `secret`; a malformed one is refused (UsageError naming `setting`). */
export function standardKeys(secret: string, setting = "secret"): Buffer[] {
  requireArgument(typeof secret === "string", setting, "a string", secret);
  const problem = standardSecretProblem(secret);
  if (problem !== undefined) throw new UsageError(`${setting} is not a Standard Webhooks secret: ${problem}`);
  return secret.split(" ").map((each) => Buffer.from(each.slice(SECRET_PREFIX.length), "base64"));
}

/**
 * The spec forbids a `.` in the id (the signed content is split by dots); header values must be
 * visible ASCII. An id that is neither is not sent: the caller derives one (webhookIdOf).
 */
const SAFE_ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;

/** Whether an id may be signed and sent as webhook-id. */
export const isWebhookId = (id: unknown): id is string => typeof id === "string" && SAFE_ID.test(id);

/**
 * The webhook-id of a body: the event's messageId (Segment's own deduplication key, the same for
 * every retry and replay of the event), else, for a batch, a raw body or a messageId the spec
 * refuses, `msg_` and a hash of the body, so that it too stays the same for every attempt.
 */
export function webhookIdOf(body: string | Uint8Array): string {
  const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
  const messageId = messageIdOf(text);
  if (isWebhookId(messageId)) return messageId;
  return `msg_${createHash("sha256").update(body).digest("base64url").slice(0, 27)}`;
}

function messageIdOf(text: string): unknown {
  if (!text.trimStart().startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as { messageId?: unknown }).messageId : undefined;
  } catch {
    return undefined;
  }
}

/** The raw HMAC-SHA256 of `${id}.${timestamp}.${body}`. */
function digest(key: Buffer, id: string, timestamp: number, body: string | Uint8Array): Buffer {
  return createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** `v1,<base64>`: the body's signature by each secret, space-separated, sent at `timestamp` (whole seconds since the epoch). */
export function signStandard(secret: string, id: string, timestamp: number, body: string | Uint8Array): string {
  requireArgument(isWebhookId(id), "id", "visible ASCII without '.', 1 to 256 characters", id);
  requireArgument(Number.isSafeInteger(timestamp) && timestamp >= 0, "timestamp", "whole seconds since the epoch", timestamp);
  requireArgument(isBody(body), "body", "a string or bytes", body);
  return standardKeys(secret)
    .map((key) => `v1,${digest(key, id, timestamp, body).toString("base64")}`)
    .join(" ");
}

/** The three headers of one attempt, signed at `nowMs` (the attempt's own time, as the spec asks). */
export function standardHeaders(secret: string, id: string, nowMs: number, body: string | Uint8Array): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestamp),
    [WEBHOOK_SIGNATURE_HEADER]: signStandard(secret, id, timestamp, body),
  };
}

/** The three headers as received; any may be missing. */
export interface StandardHeaderValues {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

export type StandardFailure = "missing-signature" | "malformed-signature" | "mismatch" | "timestamp-too-old" | "timestamp-too-new";
export type StandardVerdict = { ok: true } | { ok: false; reason: StandardFailure };

export interface StandardCheck {
  nowMs: number;
  /** Seconds either way (default 300); a timestamp exactly that far off still passes, as in the reference libraries. */
  toleranceSeconds?: number | undefined;
}

const TIMESTAMP = /^\d{1,15}$/;

/**
 * Verifies a request's three headers and raw body: the timestamp within the tolerance of `nowMs`
 * (a replay of an old request is refused, and so is one dated ahead), then any `v1` signature in
 * the space-delimited list matching, in constant time, that of any of the secrets (other
 * versions, such as v1a, are skipped).
 */
export function verifyStandard(secret: string, headers: StandardHeaderValues, body: string | Uint8Array, check: StandardCheck): StandardVerdict {
  requireArgument(isBody(body), "body", "a string or bytes", body);
  const keys = standardKeys(secret);
  const { id, timestamp, signature } = headers;
  if (id === undefined || timestamp === undefined || signature === undefined) return { ok: false, reason: "missing-signature" };
  if (!isWebhookId(id) || !TIMESTAMP.test(timestamp)) return { ok: false, reason: "malformed-signature" };
  const seconds = Number(timestamp);
  const nowSeconds = Math.floor(check.nowMs / 1000);
  const tolerance = check.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (nowSeconds - seconds > tolerance) return { ok: false, reason: "timestamp-too-old" };
  if (seconds - nowSeconds > tolerance) return { ok: false, reason: "timestamp-too-new" };
  const candidates = v1Signatures(signature);
  if (candidates.length === 0) return { ok: false, reason: "malformed-signature" };
  // Every pair is compared, found or not: how many are tried says nothing of which matched.
  let matched = false;
  for (const key of keys) {
    const expected = digest(key, id, seconds, body);
    for (const candidate of candidates) if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** The decoded `v1` signatures of a webhook-signature header (at most 16: a rotation needs two or three). */
function v1Signatures(header: string): Buffer[] {
  const found: Buffer[] = [];
  for (const entry of header.split(" ").slice(0, 16)) {
    const comma = entry.indexOf(",");
    if (comma === -1 || entry.slice(0, comma) !== "v1") continue;
    const encoded = entry.slice(comma + 1);
    if (BASE64.test(encoded) && encoded !== "") found.push(Buffer.from(encoded, "base64"));
  }
  return found;
}

/** How a person reads each failure. */
export const STANDARD_FAILURES: Record<StandardFailure, string> = {
  "missing-signature": "webhook-id, webhook-timestamp or webhook-signature is missing",
  "malformed-signature": "the headers are malformed (webhook-id with a '.', a webhook-timestamp that is not whole seconds, or no v1,<base64> signature)",
  mismatch: "no signature matches the id, timestamp and body",
  "timestamp-too-old": "webhook-timestamp is older than the tolerance (a replayed or delayed request)",
  "timestamp-too-new": "webhook-timestamp is ahead of now by more than the tolerance",
};
