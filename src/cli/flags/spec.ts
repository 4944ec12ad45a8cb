import type { WhConfig } from "../../config/schema.js";

/**
 * One flag, declared once: commander's option, the command's typed flags, shell completion and
 * the resume command are all made from this (vitest's cli-config.ts is the model).
 */
export interface Flag<V = unknown> {
  /** commander's syntax: `--url <url>`, `--dry-run`, `-q, --quiet`, `--no-color`. */
  readonly syntax: string;
  readonly description: string;
  /** The value when the flag is absent, as the user would type it (shown by --help, then parsed). */
  readonly default?: string;
  /** May be given several times: the values in order. */
  readonly repeatable?: boolean;
  /** Turns the text into the value, or throws a UsageError that names the flag. */
  readonly parse?: (text: string, flag: string) => V;
  /**
   * Changes what a resumed run reads, delivers or records, or how it shows it: the resume command
   * repeats it. `url`, `header` and `secret` mask what must not be printed.
   */
  readonly resume?: true | "url" | "header" | "secret";
  /** The config key this flag overrides: its parsed value must fit that key (ConfigFit). */
  readonly config?: keyof WhConfig;
  /** What shell completion offers after the flag: fixed values, a file name, or the config's sources. */
  readonly complete?: readonly string[] | "file" | "sources";
}

export type FlagTable = Readonly<Record<string, Flag>>;

/** Declares a flag, keeping its literal shape (whether it has a default, repeats, names a config key). */
export function flag<const F extends Flag>(spec: F): F {
  return spec;
}

type Takes<F> = F extends { readonly syntax: `${string}<${string}>` | `${string}[${string}]` } ? true : false;
type One<F> = F extends { readonly parse: (text: string, flag: string) => infer V } ? V : Takes<F> extends true ? string : boolean;
type ValueOf<F> = F extends { readonly repeatable: true } ? Array<One<F>> : One<F>;
type Defaulted<T extends FlagTable> = { [K in keyof T]: T[K] extends { readonly default: string } ? K : never }[keyof T];

/** The flags a command receives: parsed, a flag with a default always present. */
export type FlagValues<T extends FlagTable> = { [K in Exclude<keyof T, Defaulted<T>>]?: ValueOf<T[K]> } & { [K in Defaulted<T>]: ValueOf<T[K]> };

/** A table whose flags that name a config key each parse to a value that key accepts (else `never`). */
export type ConfigFit<T extends FlagTable> = {
  [K in keyof T]: T[K] extends { readonly config: infer C extends keyof WhConfig } ? (ValueOf<T[K]> extends NonNullable<WhConfig[C]> ? T[K] : never) : T[K];
};

/**
 * Declares a table of flags. The type-level tie to the config schema: a flag that names a config
 * key must parse to a value that key accepts, or this call fails to compile.
 */
export function flagTable<const T extends FlagTable>(table: T & ConfigFit<T>): T {
  return table;
}

/** The long name of a flag: `--dry-run` for `--dry-run`, `--quiet` for `-q, --quiet`. */
export function longName(spec: Flag): string {
  const long = /--[a-z][a-z-]*/.exec(spec.syntax)?.[0];
  if (long === undefined) throw new Error(`flag syntax without a long name: ${spec.syntax}`);
  return long;
}

/**
 * The flags as the command takes them: each given value, or else its default, parsed by its flag.
 * `values` is commander's, keyed by the table's keys (commander's camelCase names).
 */
export function parseFlags<T extends FlagTable>(table: T, values: Record<string, unknown>): FlagValues<T> {
  const parsed: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(table)) {
    const value = values[key] ?? spec.default;
    if (value === undefined) continue;
    const parse = spec.parse;
    const name = longName(spec);
    if (parse === undefined || typeof value === "boolean") parsed[key] = value;
    else if (Array.isArray(value)) parsed[key] = value.map((each: string) => parse(each, name));
    else parsed[key] = parse(String(value), name);
  }
  return parsed as FlagValues<T>;
}
