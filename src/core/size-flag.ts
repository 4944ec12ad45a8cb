import { UsageError } from "./errors.js";

const UNITS: Record<string, number> = { b: 1, kb: 1_000, mb: 1_000_000, gb: 1_000_000_000, kib: 1_024, mib: 1_048_576, gib: 1_073_741_824 };

/**
 * A size flag: a number with a unit, `500kb`, `1.5mb`, `2GiB` (kb/mb/gb are powers of 1,000 as
 * Segment states its limits; KiB/MiB/GiB of 1,024), or plain bytes. The fallback when absent.
 */
export function parseSizeFlag(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = UNITS[(match?.[2] ?? "").toLowerCase() || "b"];
  const bytes = match === null || unit === undefined ? Number.NaN : Math.floor(Number(match[1]) * unit);
  if (!Number.isFinite(bytes) || bytes < 1) throw new UsageError(`${flag} ${JSON.stringify(value)}: expected a size such as 500kb, 2mb or 1gb`);
  return bytes;
}
