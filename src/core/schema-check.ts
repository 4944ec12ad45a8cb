import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";
import { isJsonObject } from "./message/parse-json.js";

/**
 * A zod schema, and a yes-or-no check of our own that accepts exactly what it accepts, built side
 * by side from one definition: each builder here makes both halves of one kind of value, so a
 * message schema is written once (src/core/message/schema.ts). A test holds every check to its
 * schema's answer on a corpus of valid and invalid messages.
 *
 * Why: zod builds a result object and an issue list for every field it looks at: 2.7 KB of the
 * 16.8 KB replay allocated per event, and 1.1 us per message against 0.23 us for the check, which
 * allocates nothing. Only what replay validates on its hot path is built this way; every kind here
 * returns an accepted value unchanged (a loose object keeps its other keys), so the check's yes
 * can hand the value on as zod would.
 */
export interface Checked<T extends z.ZodMiniType = z.ZodMiniType> {
  readonly schema: T;
  readonly check: (value: unknown) => boolean;
}

type Check = (value: unknown) => boolean;
type Shape = Record<string, Checked>;
type SchemaShape<S extends Shape> = { [K in keyof S]: S[K]["schema"] };

export const string = (): Checked<z.ZodMiniString> => ({ schema: z.string(), check: (value) => typeof value === "string" });

/** A string of at least one character. */
export const nonEmptyString = (): Checked<z.ZodMiniString> => ({
  schema: z.string().check(z.minLength(1)),
  check: (value) => typeof value === "string" && value.length > 0,
});

/** zod's z.number() refuses NaN and the infinities. */
export const number = (): Checked<z.ZodMiniNumber> => ({ schema: z.number(), check: (value) => typeof value === "number" && Number.isFinite(value) });

export function literal<const T extends string | number | boolean>(value: T): Checked<z.ZodMiniLiteral<T>> {
  return { schema: z.literal(value), check: (input) => input === value };
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  params: Parameters<typeof z.enum>[1],
): Checked<z.ZodMiniEnum<z.core.util.ToEnum<T[number]>>> {
  const allowed = new Set<unknown>(values);
  return { schema: z.enum(values, params), check: (value) => allowed.has(value) };
}

/** What `is` says yes to, typed as T. */
export function custom<T>(is: (value: unknown) => value is T, params: Parameters<typeof z.custom>[1]): Checked<z.ZodMiniCustom<T, T>> {
  return { schema: z.custom<T>(is, params), check: is };
}

/** Absent (or undefined), or the inner kind. */
export function optional<T extends z.ZodMiniType>(inner: Checked<T>): Checked<z.ZodMiniOptional<T>> {
  const check = inner.check;
  return { schema: z.optional(inner.schema), check: (value) => value === undefined || check(value) };
}

/** Absent, undefined, null, or the inner kind. */
export function nullish<T extends z.ZodMiniType>(inner: Checked<T>): Checked<z.ZodMiniOptional<z.ZodMiniNullable<T>>> {
  const check = inner.check;
  return { schema: z.nullish(inner.schema), check: (value) => value === undefined || value === null || check(value) };
}

/** An object (not an array) whose fields are checked; any other keys pass as they are. */
export function looseObject<S extends Shape>(shape: S): Checked<z.ZodMiniObject<SchemaShape<S>, z.core.$loose>> {
  const keys = Object.keys(shape);
  const checks: Check[] = keys.map((key) => (shape[key] as Checked).check);
  const schemas = Object.fromEntries(keys.map((key) => [key, (shape[key] as Checked).schema])) as SchemaShape<S>;
  return {
    schema: z.looseObject(schemas),
    check: (value) => {
      if (!isJsonObject(value)) return false;
      for (let index = 0; index < keys.length; index += 1) if (!(checks[index] as Check)(value[keys[index] as string])) return false;
      return true;
    },
  };
}

/**
 * wh's messages are English, given with each parse: zod/mini has no locale until one is set, and
 * setting it with z.config would change the messages of the application that imports wh (zod's
 * configuration is global). A parse's own error map outranks the global one, whatever the host set.
 */
const ENGLISH: z.core.ParseContext<z.core.$ZodIssue> = { error: en().localeError };

/** zod's safeParse, with wh's English messages. */
export function safeParse<T extends z.ZodMiniType>(schema: T, value: unknown): z.core.util.SafeParseResult<z.output<T>> {
  return schema.safeParse(value, ENGLISH);
}

/**
 * zod's safeParse with the check first: a value the check accepts is returned as it is; one it
 * refuses is parsed by zod, which says why.
 */
export function withFastPath<T extends z.ZodMiniType>({ schema, check }: Checked<T>): (value: unknown) => z.core.util.SafeParseResult<z.output<T>> {
  return (value) => (check(value) ? { success: true, data: value as z.output<T> } : safeParse(schema, value));
}
