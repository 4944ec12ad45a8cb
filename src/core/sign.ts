import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { isBody, requireArgument } from "./arguments.js";
import { parseJsonOrThrow } from "./message/parse-json.js";

/** The name of the header that carries the signature. */
export const SIGNATURE_HEADER = "X-Signature";

/** A signature's length: 40 hex digits. */
const SIGNATURE_LENGTH = 40;

/** Lowercase hex HMAC-SHA1 of the exact body bytes, keyed with the shared secret. */
export function signBody(secret: string, body: Uint8Array | string): string {
  requireArgument(isBody(body), "body", "a string or bytes", body);
  return createHmac("sha1", secretKey(secret)).update(body).digest("hex");
}

/** Key objects by secret: a run signs with one secret, `wh serve` with one per source. */
const keys = new Map<string, KeyObject>();
/** More secrets than this start the map afresh: a library caller's many secrets stay bounded. */
const MAX_KEYS = 16;

/**
 * The secret as a key object, made once per secret: given a string, Node encodes it and prepares
 * a key anew for every HMAC, 1.85-1.96 us per signature of a 300-byte body against 1.64 us with
 * a key object (200,000 signatures in a loop). Making a key object costs more than an HMAC (about
 * 4 us), so one remembered secret would make signing slower for sources that take turns. Same
 * bytes as the string: its UTF-8.
 */
function secretKey(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    requireArgument(typeof secret === "string", "secret", "a string", secret);
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(Buffer.from(secret, "utf8"));
    keys.set(secret, key);
  }
  return key;
}

/**
 * The two digests verifySignature compares, decoded from hex into these (it runs to its end
 * synchronously: one pair serves every call). An HMAC's digest() as a Buffer, a Buffer of the
 * signature and a regular expression to check it cost 0.4 us of a 4 us verifyRequest of one event
 * more than the hex digest and these two writes (bench/verify-request.js).
 */
const EXPECTED = Buffer.alloc(20);
const GIVEN = Buffer.alloc(20);

export type VerifyResult = { ok: true } | { ok: false; reason: "malformed-signature" | "mismatch" };

/**
 * Checks a signature against the raw body bytes in constant time. A signature that is not
 * 40 hex characters is invalid, not an error. Upper-case hex is accepted.
 */
export function verifySignature(secret: string, body: Uint8Array | string, signature: string): VerifyResult {
  requireArgument(isBody(body), "body", "a string or bytes", body);
  requireArgument(typeof signature === "string", "signature", "a string", signature);
  const candidate = signature.trim();
  // Decoding hex stops at the first character that is not a hex digit: 20 bytes are 40 digits.
  if (candidate.length !== SIGNATURE_LENGTH || GIVEN.write(candidate, "hex") !== GIVEN.length) return { ok: false, reason: "malformed-signature" };
  EXPECTED.write(createHmac("sha1", secretKey(secret)).update(body).digest("hex"), "hex");
  return timingSafeEqual(EXPECTED, GIVEN) ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** What a body's signature came to: a single event, or a batch signed over its first event. */
export type BodyVerdict = { ok: true; kind: "single" | "batch" } | { ok: false; reason: "malformed-signature" | "mismatch" };

/**
 * Verifies a body as Segment's destinations sign it: the exact bytes, or, for a batch (a JSON
 * array body from the Actions destination), the compact serialisation of its first event only.
 */
export function verifyBody(secret: string, body: Uint8Array | string, signature: string): BodyVerdict {
  const direct = verifySignature(secret, body, signature);
  if (direct.ok) return { ok: true, kind: "single" };
  if (direct.reason === "mismatch") {
    const first = firstBatchEvent(body);
    if (first !== undefined && verifySignature(secret, first, signature).ok) return { ok: true, kind: "batch" };
  }
  return direct;
}

/** The events of a JSON array body, or undefined when the body is not one. */
export function batchEvents(body: Uint8Array | string): unknown[] | undefined {
  const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
  if (!text.trimStart().startsWith("[")) return undefined;
  try {
    const value: unknown = parseJsonOrThrow(text);
    return Array.isArray(value) && value.length > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/** What Segment signs of a batch: its first event, serialised compactly. */
function firstBatchEvent(body: Uint8Array | string): string | undefined {
  const events = batchEvents(body);
  return events === undefined ? undefined : JSON.stringify(events[0]);
}

/** How a person reads a valid batch verdict. */
export const BATCH_VERDICT = "batch, first event signed, as Segment signs batches; the other events are not covered";
