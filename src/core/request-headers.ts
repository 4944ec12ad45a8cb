import { isBody, requireArgument } from "./arguments.js";
import { SIGNATURE_HEADER, signBody } from "./sign.js";
import { type SigningScheme, standardHeaders, webhookIdOf } from "./standard-webhooks.js";

/** The headers of a webhook request: wh's own, its signature (either scheme), and a URL's own over them. */
/**
 * The headers of every request for one body: signed once, over the exact bytes that are sent.
 * A URL's static headers come last (the config refuses the names wh owns). `json` false: no
 * Content-Type (a request without a body).
 */
export function buildRequestHeaders(body: string | Uint8Array, userAgent: string, sharedSecret: string | undefined, json = true): Record<string, string> {
  requireArgument(isBody(body), "body", "a string or bytes", body);
  requireArgument(typeof userAgent === "string", "userAgent", "a string", userAgent);
  requireArgument(sharedSecret === undefined || typeof sharedSecret === "string", "sharedSecret", "a string or undefined", sharedSecret);
  const headers: Record<string, string> = json ? { "Content-Type": "application/json", "User-Agent": userAgent } : { "User-Agent": userAgent };
  if (sharedSecret !== undefined) headers[SIGNATURE_HEADER] = signBody(sharedSecret, body);
  return headers;
}

/** The signature headers of one attempt, made at its send time: none for Segment's scheme (its X-Signature is in buildRequestHeaders). */
export type AttemptSigner = (nowMs: number) => Record<string, string>;

/**
 * Standard Webhooks' headers per attempt: the webhook-id stays the same for every attempt and
 * the timestamp is the attempt's (spec/standard-webhooks.md: "Every time an attempt is retried the
 * timestamp of the attempt is updated"), so a retry hours later is not refused as a replay.
 */
export function attemptSigner(scheme: SigningScheme | undefined, sharedSecret: string | undefined, body: string | Uint8Array): AttemptSigner | undefined {
  if (scheme !== "standard" || sharedSecret === undefined) return undefined;
  const id = webhookIdOf(body);
  return (nowMs) => standardHeaders(sharedSecret, id, nowMs, body);
}

/** The secret buildRequestHeaders signs X-Signature with: none when the scheme is Standard Webhooks. */
export const segmentSecret = (scheme: SigningScheme | undefined, sharedSecret: string | undefined): string | undefined =>
  scheme === "standard" ? undefined : sharedSecret;

/**
 * A URL's own headers over the request's, whatever the case of their names (a subscription's
 * mapped `user-agent` replaces `User-Agent`, as in actions-core's request client).
 */
export function withTargetHeaders(base: Readonly<Record<string, string>>, own: Readonly<Record<string, string>>): Record<string, string> {
  const names = Object.keys(own);
  if (names.length === 0) return { ...base };
  const replaced = new Set(names.map((name) => name.toLowerCase()));
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (!replaced.has(name.toLowerCase())) merged[name] = value;
  return Object.assign(merged, own);
}
