import { createHmac, timingSafeEqual } from "node:crypto";

/** The name of the header that carries the signature. */
export const SIGNATURE_HEADER = "X-Signature";

const SIGNATURE_PATTERN = /^[0-9a-fA-F]{40}$/;

/** Lowercase hex HMAC-SHA1 of the exact body bytes, keyed with the shared secret. */
export function signBody(secret: string, body: Uint8Array | string): string {
  return createHmac("sha1", secret).update(body).digest("hex");
}

export type VerifyResult = { ok: true } | { ok: false; reason: "malformed-signature" | "mismatch" };

/**
 * Checks a signature against the raw body bytes in constant time. A signature that is not
 * 40 hex characters is invalid, not an error. Upper-case hex is accepted.
 */
export function verifySignature(secret: string, body: Uint8Array | string, signature: string): VerifyResult {
  const candidate = signature.trim();
  if (!SIGNATURE_PATTERN.test(candidate)) return { ok: false, reason: "malformed-signature" };
  const expected = createHmac("sha1", secret).update(body).digest();
  const given = Buffer.from(candidate, "hex");
  return timingSafeEqual(expected, given) ? { ok: true } : { ok: false, reason: "mismatch" };
}
