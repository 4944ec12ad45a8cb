import * as z from "zod/mini";
import { kindOf, MAX_TIMER_MS } from "../core/arguments.js";
import type { Clock } from "../core/clock.js";
import { formatIssues } from "../core/message/schema.js";
import { safeParse } from "../core/schema-check.js";

// The library's settings as plain JavaScript may pass them: each checked when it is given, so a
// wrong one is refused at once, naming it, rather than failing later as a TypeError (or a timer
// that fires at once) deep inside a send.

type Issue = { input?: unknown };

/** A finite number of at least `min` (and at most `max`), a whole one when `whole`. */
export function numberOf({ min, max, whole = false }: { min: number; max?: number | undefined; whole?: boolean }): z.ZodMiniNumber<number> {
  const bounds = max === MAX_TIMER_MS ? ` and at most ${max} (Node's longest timer)` : "";
  const error = (issue: Issue): string => `must be a ${whole ? "whole number" : "number"} of at least ${min}${bounds} (got ${kindOf(issue.input)})`;
  return z.number({ error }).check(
    z.gte(min, { error }),
    z.lte(max ?? Number.MAX_VALUE, { error }),
    z.refine((value) => !whole || Number.isInteger(value), { error }),
  );
}

/** Milliseconds a timer can wait: from `min` to MAX_TIMER_MS. */
export const millisecondsOf = (min: number): z.ZodMiniNumber<number> => numberOf({ min, max: MAX_TIMER_MS });

/** A value `is` accepts, else "must be `what`". */
function kind<T>(what: string, is: (value: unknown) => boolean): z.ZodMiniCustom<T, T> {
  return z.custom<T>(is, { error: (issue: Issue) => `must be ${what} (got ${kindOf(issue.input)})` });
}

const hasMethods = (value: unknown, names: readonly string[]): boolean =>
  typeof value === "object" && value !== null && names.every((name) => typeof (value as Record<string, unknown>)[name] === "function");

export const aFunction = <T extends (...args: never[]) => unknown>(): z.ZodMiniCustom<T, T> => kind<T>("a function", (value) => typeof value === "function");
export const anAbortSignal = (): z.ZodMiniCustom<AbortSignal, AbortSignal> => kind("an AbortSignal", (value) => value instanceof AbortSignal);
export const aClock = (): z.ZodMiniCustom<Clock, Clock> => kind("a Clock, with now() and sleep(ms, signal)", (value) => hasMethods(value, ["now", "sleep"]));
export const aBoolean = (): z.ZodMiniBoolean<boolean> => z.boolean({ error: (issue: Issue) => `must be true or false (got ${kindOf(issue.input)})` });

/**
 * `value` checked against a z.object of settings: the parsed value, or one line per wrong
 * setting (`timeoutMs: must be …`). `what` names the whole when it is not an object at all.
 */
export function parseSettings<T extends z.ZodMiniType>(
  schema: T,
  value: unknown,
  what: string,
): { ok: true; value: z.output<T> } | { ok: false; problem: string } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, problem: `${what} must be an object (got ${kindOf(value)})` };
  const parsed = safeParse(schema, value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: formatIssues(parsed.error).join("; ") };
}
