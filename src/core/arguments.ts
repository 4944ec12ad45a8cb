import { UsageError } from "./errors.js";

// The library's functions are called from plain JavaScript too, where the types promise nothing:
// an argument they cannot take is refused at once, naming it, rather than failing as a TypeError
// from deep inside (or, worse, being taken: a statuses of "bogus" read as classic's).

/** Node's timers wait at most 2^31 - 1 ms (24.8 days): a longer delay fires at once, with a warning on stderr. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a value is, for a message: a number's value, never a string's (it may be a secret). */
export function kindOf(value: unknown): string {
  if (value === null || value === undefined || typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Throws a UsageError `name must be what (got …)` unless `ok`. */
export function requireArgument(ok: boolean, name: string, what: string, value: unknown): void {
  if (!ok) throw new UsageError(`${name} must be ${what} (got ${kindOf(value)})`);
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A string or bytes: what is signed and sent. */
export const isBody = (value: unknown): value is string | Uint8Array => typeof value === "string" || value instanceof Uint8Array;
