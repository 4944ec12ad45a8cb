import { requireArgument } from "./arguments.js";
import { parseJson } from "./message/parse-json.js";
import { batchEvents, SIGNATURE_HEADER, verifySignature } from "./sign.js";

/**
 * Why a request's signature was refused: missing, or what most likely went wrong. One text for
 * every place that shows it (wh listen's line and --json record, its inspector page, wh verify
 * --capture), so that none says less than another.
 */
export function refusalReason(secret: string, body: Uint8Array, signature: string | undefined): string {
  return signature === undefined ? `no ${SIGNATURE_HEADER} header` : explainMismatch(secret, body, signature);
}

/**
 * Says what most likely went wrong when a signature does not match a body, by trying the
 * usual accidents: a trailing newline added or lost, and the JSON re-serialised.
 */
export function explainMismatch(secret: string, body: Uint8Array, signature: string): string {
  requireArgument(typeof secret === "string", "secret", "a string", secret);
  requireArgument(body instanceof Uint8Array, "body", "bytes (a Uint8Array or Buffer)", body);
  requireArgument(typeof signature === "string", "signature", "a string", signature);
  const given = signature.trim();
  if (!/^[0-9a-fA-F]{40}$/.test(given)) return explainMalformed(given);
  const text = Buffer.from(body).toString("utf8");
  const matches = (candidate: string): boolean => verifySignature(secret, candidate, given).ok;
  const trimmed = text.replace(/(\r?\n)+$/, "");
  if (trimmed !== text && matches(trimmed)) {
    return "the signature matches the body without its trailing newline: a newline was added after signing (echo, an editor or a here-doc); verify the exact bytes that were received";
  }
  if (matches(`${text}\n`))
    return "the signature matches the body with a trailing newline: the final newline was lost; verify the exact bytes that were received";
  const events = batchEvents(trimmed);
  if (events !== undefined) {
    const signed = events.findIndex((event) => matches(JSON.stringify(event)));
    if (signed > 0)
      return `this is a batch of ${events.length} events and the signature is that of event ${signed + 1}: Segment signs a batch over its first event's compact serialisation`;
    if (matches(JSON.stringify(events)))
      return "this is a batch and the signature covers the whole array: Segment's Actions destination signs only the first event's compact serialisation";
  }
  const variant = reserialisations(trimmed).find(([, candidate]) => candidate !== text && matches(candidate));
  if (variant !== undefined) {
    return `the signature matches the same JSON serialised ${variant[0]}: the body was parsed and serialised again before verifying; verify the raw bytes as received, before any JSON parsing`;
  }
  if (events !== undefined)
    return `no usual variant matches; this body is a batch of ${events.length} events, whose signature Segment computes over the first event's compact serialisation only: the signature was made with another secret, or over other events`;
  return "no usual variant of this body matches: the signature was made with another secret, or over another body";
}

function explainMalformed(given: string): string {
  if (/^sha1=/i.test(given)) return "the signature has a 'sha1=' prefix; X-Signature is the bare 40-character hex digest";
  if (/^[0-9a-fA-F]{64}$/.test(given)) return "the signature is 64 hex characters, like HMAC-SHA256; X-Signature is HMAC-SHA1 (40 hex characters)";
  return `the signature is not 40 hexadecimal characters (it has ${given.length} characters)`;
}

function reserialisations(text: string): [string, string][] {
  const parsed = parseJson(text);
  if (!parsed.ok) return [];
  const { value } = parsed;
  const compact = JSON.stringify(value);
  return [
    ["compactly (whitespace removed)", compact],
    ["with 2-space indentation", JSON.stringify(value, null, 2)],
    ["with 4-space indentation", JSON.stringify(value, null, 4)],
    ["with sorted keys", JSON.stringify(sortKeys(value))],
    ["with non-ASCII characters escaped", compact.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`)],
    ["with slashes escaped", compact.replaceAll("/", "\\/")],
    [
      "with spaces after separators",
      JSON.stringify(value, null, 1)
        .replace(/\n\s*/g, " ")
        .replace(/([[{]) /g, "$1")
        .replace(/ ([\]}])/g, "$1"),
    ],
  ];
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
