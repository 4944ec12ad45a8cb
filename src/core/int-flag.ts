import { UsageError } from "../core/errors.js";

/** A whole-number flag within [min, max]; the fallback when absent. */
export function parseIntFlag(flag: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (value.trim() === "" || !Number.isInteger(number) || number < min || number > max) {
    throw new UsageError(`${flag} ${JSON.stringify(value)}: expected a whole number from ${min} to ${max}`);
  }
  return number;
}
