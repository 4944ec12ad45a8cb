import { isIP } from "node:net";
import { MAX_DURATION_MS, parseDurationMs } from "../../core/duration.js";
import { UsageError } from "../../core/errors.js";
import { hostNameProblem } from "../../core/host-name.js";
import { queueUrlProblem } from "../../core/queue-url.js";
import { redactUrlText } from "../../core/redact.js";
import { parseShard, type Shard } from "../../core/shard.js";
import { closest } from "../wiring/suggest.js";

/**
 * The flag parsers: each turns a flag's text into its value, or throws a usage error that names the
 * flag and what it expected. They live in cli/ because a UsageError is the command line's notion;
 * core/ only says whether a text is valid (parseDurationMs, parseShard, queueUrlProblem).
 */
type Parser<V> = (text: string, flag: string) => V;

/** A whole number within [min, max]. */
export function wholeNumber(min: number, max: number): Parser<number> {
  return (text, flag) => {
    const number = Number(text);
    if (text.trim() === "" || !Number.isInteger(number) || number < min || number > max) {
      throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a whole number from ${min} to ${max}`);
    }
    return number;
  };
}

/** A duration with its unit (`500ms`, `5s`, `4h`), in milliseconds; `positive` refuses 0. */
export function duration(options: { positive?: boolean } = {}): Parser<number> {
  return (text, flag) => {
    const ms = parseDurationMs(text);
    if (ms !== undefined && ms > MAX_DURATION_MS) throw new UsageError(`${flag} ${JSON.stringify(text)}: at most 24d (Node's timers cannot wait longer)`);
    if (ms === 0 && options.positive === true) throw new UsageError(`${flag} must be more than 0`);
    if (ms !== undefined) return ms;
    const bare = /^\s*(\d+(?:\.\d+)?)\s*$/.exec(text)?.[1];
    if (bare !== undefined) throw new UsageError(`${flag} ${JSON.stringify(text)}: a duration needs a unit: did you mean ${bare}s (or ${bare}ms)?`);
    throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a duration such as 500ms, 5s, 10m or 4h`);
  };
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1_000, mb: 1_000_000, gb: 1_000_000_000, kib: 1_024, mib: 1_048_576, gib: 1_073_741_824 };

/**
 * A size: a number with a unit, `500kb`, `1.5mb`, `2GiB` (kb/mb/gb are powers of 1,000 as Segment
 * states its limits; KiB/MiB/GiB of 1,024), or plain bytes.
 */
export function size(): Parser<number> {
  return (text, flag) => {
    const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
    const unit = SIZE_UNITS[(match?.[2] ?? "").toLowerCase() || "b"];
    const bytes = match === null || unit === undefined ? Number.NaN : Math.floor(Number(match[1]) * unit);
    if (!Number.isFinite(bytes) || bytes < 1) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a size such as 500kb, 2mb or 1gb`);
    return bytes;
  };
}

/** One of a fixed list; `upperCase` accepts any case (HTTP methods). */
export function oneOf<const V extends string>(values: readonly V[], options: { upperCase?: boolean } = {}): Parser<V> {
  const listed = values.length === 2 ? values.join(" or ") : `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
  return (text, flag) => {
    const value = options.upperCase === true ? text.toUpperCase() : text;
    if (!(values as readonly string[]).includes(value)) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected ${listed}`);
    return value as V;
  };
}

/** `i/n`: shard i of n, 0-based. */
export const shard: Parser<Shard> = (text, flag) => {
  const parsed = parseShard(text);
  if (parsed === undefined) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected i/n with 0 <= i < n, such as 0/4`);
  return parsed;
};

/** A Redis queue's URL; the error shows it with its password masked. */
export const queueUrl: Parser<string> = (text, flag) => {
  const problem = queueUrlProblem(text);
  if (problem !== undefined) throw new UsageError(`${flag} ${JSON.stringify(redactUrlText(text))}: ${problem}`);
  return text;
};

/**
 * The address a server listens on. An empty one is refused (Node would listen on every
 * interface); so is a dotted number that is no IPv4 address (`999.1.1.1`), which Node would
 * otherwise look up as a host name.
 */
export const host: Parser<string> = (text, flag) => {
  if (text === "") throw new UsageError(`${flag} "": give an address, such as 127.0.0.1 (or 0.0.0.0 for every interface)`);
  if (!/^[\w.:%-]+$/.test(text))
    throw new UsageError(`${flag} ${JSON.stringify(text)}: not an IP address or a host name`, {
      hint: /^\[.*\]$/.test(text) ? "give an IPv6 address without the brackets: --host ::1" : undefined,
    });
  if (/^[\d.]+$/.test(text) && isIP(text) === 0)
    throw new UsageError(`${flag} ${text}: not a valid IPv4 address (four numbers from 0 to 255, such as 127.0.0.1)`);
  return text;
};

/** A name `wh serve --allow-host` adds (see hostNameProblem). */
export const hostName: Parser<string> = (text, flag) => {
  const problem = hostNameProblem(text);
  if (problem !== undefined) throw new UsageError(`${flag} ${JSON.stringify(text)}: ${problem}`);
  return text;
};

/** Events per second, `100` or `100/s`. */
export const rate: Parser<number> = (text, flag) => {
  const perSecond = Number(text.replace(/\/s$/, ""));
  if (!Number.isFinite(perSecond) || perSecond <= 0) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected events per second, such as 100 or 100/s`);
  return perSecond;
};

/** Names from a fixed list, comma-separated (`page,track`); an unknown one is refused with the known ones listed. */
export function nameList<const V extends string>(known: readonly V[], what: string): Parser<V[]> {
  return (text, flag) => {
    const names = text
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name !== "");
    if (names.length === 0) throw new UsageError(`${flag} ${JSON.stringify(text)}: give one or more ${what} names, comma-separated`);
    const unknown = names.find((name) => !(known as readonly string[]).includes(name));
    if (unknown !== undefined) {
      const guess = closest(unknown, known);
      throw new UsageError(`${flag}: no ${what} is named ${JSON.stringify(unknown)}${guess === undefined ? "" : ` (did you mean ${guess}?)`}`, {
        hint: `the ${what}s are: ${known.join(", ")}`,
      });
    }
    return names as V[];
  };
}
