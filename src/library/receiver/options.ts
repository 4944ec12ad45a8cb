import { UsageError } from "../../core/errors.js";
import { isJsonObject } from "../../core/message/parse-json.js";
import { DEFAULT_TOLERANCE_SECONDS, SIGNING_SCHEMES, type SigningScheme, standardKeys } from "../../core/standard-webhooks.js";

// What the receiver entry points are given, checked when they are called or made: from plain
// JavaScript anything can arrive, and a wrong option must never become "accept everything", a
// TypeError deep inside a request, or a setting silently ignored (a misspelt name).

/** A body larger than this is refused unread (413) unless an adapter is given its own limit. */
export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024;

/** What every adapter takes. */
export interface WebhookOptions<Batches extends boolean = false> {
  /** The destination's shared secret. */
  secret: string;
  /** The largest body read (default 5 MiB); a larger one is answered 413 and left unread. */
  maxBytes?: number | undefined;
  /**
   * Accept Actions batches (a JSON array body). Off by default: Segment signs a batch over its
   * first event only, so the other events are unsigned, and anyone holding one signed event can
   * append any events they like. With it on, a batch's webhook says which part is which.
   */
  batches?: Batches | undefined;
  /**
   * segment (default): X-Signature. standard: Standard Webhooks' webhook-id, webhook-timestamp and
   * webhook-signature, with a `whsec_` secret; the whole body is signed, a batch too.
   */
  scheme?: SigningScheme | undefined;
  /** scheme standard: how many seconds webhook-timestamp may be from now, either way (default 300). */
  toleranceSeconds?: number | undefined;
}

export interface CheckedOptions extends CheckedSigning {
  maxBytes: number;
}

/** What verifying a request takes: the secret, the scheme and its tolerance, whether batches pass. */
export interface CheckedSigning {
  secret: string;
  batches: boolean;
  scheme: SigningScheme;
  toleranceSeconds: number;
}

/** How a value from plain JavaScript is named in a message (never its content: it may be a secret). */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" || typeof value === "boolean") return `${typeof value} ${String(value)}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The settings object itself, with no setting it does not know (a misspelt one would be ignored). */
export function checkSettings(value: unknown, what: string, known: readonly string[]): Record<string, unknown> {
  if (!isJsonObject(value)) throw new UsageError(`${what} must be an object { ${known.join(", ")} } (got ${describeValue(value)})`);
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length > 0)
    throw new UsageError(`unknown ${what} setting ${unknown.map((key) => JSON.stringify(key)).join(", ")}: the settings are ${known.join(", ")}`);
  return value;
}

/** No secret, or an empty one, must never mean "accept everything" (an empty key signs too). */
export function checkSecret(secret: unknown): string {
  if (secret === undefined || secret === null || secret === "")
    throw new UsageError("secret is missing or empty: a webhook receiver needs the destination's shared secret");
  if (typeof secret !== "string") throw new UsageError(`secret must be a string, the destination's shared secret (got ${describeValue(secret)})`);
  return secret;
}

export function checkBatches(batches: unknown): boolean {
  if (batches !== undefined && typeof batches !== "boolean") throw new UsageError(`batches must be true or false (got ${describeValue(batches)})`);
  return batches === true;
}

/** The scheme and tolerance, checked with the secret: a standard secret must be whsec_ and base64. */
export function checkSigning(given: Record<string, unknown>): CheckedSigning {
  const secret = checkSecret(given.secret);
  const scheme = given.scheme ?? "segment";
  if (!SIGNING_SCHEMES.includes(scheme as SigningScheme)) throw new UsageError(`scheme must be "segment" or "standard" (got ${describeValue(scheme)})`);
  if (scheme === "standard") standardKeys(secret, "secret");
  const tolerance = given.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof tolerance !== "number" || !Number.isFinite(tolerance) || tolerance < 0)
    throw new UsageError(`toleranceSeconds must be a number of seconds, 0 or more (got ${describeValue(given.toleranceSeconds)})`);
  return { secret, batches: checkBatches(given.batches), scheme: scheme as SigningScheme, toleranceSeconds: tolerance };
}

export const SIGNING_OPTION_NAMES = ["secret", "batches", "scheme", "toleranceSeconds"] as const;
const OPTION_NAMES = ["secret", "maxBytes", "batches", "scheme", "toleranceSeconds"] as const;

/** The adapters' options, checked when the adapter is made. */
export function checkOptions(options: unknown): CheckedOptions {
  const given = checkSettings(options, "webhook options", OPTION_NAMES);
  const maxBytes = given.maxBytes === undefined ? DEFAULT_MAX_BODY_BYTES : given.maxBytes;
  if (typeof maxBytes !== "number" || !Number.isSafeInteger(maxBytes) || maxBytes <= 0)
    throw new UsageError(`maxBytes must be a positive whole number of bytes (got ${describeValue(given.maxBytes)})`);
  return { ...checkSigning(given), maxBytes };
}

/** A handler the adapter will call for each verified request: checked now, not at the first request. */
export function checkHandler(handler: unknown, adapter: string): void {
  if (typeof handler !== "function") throw new UsageError(`${adapter} needs a handler function as its second argument (got ${describeValue(handler)})`);
}
