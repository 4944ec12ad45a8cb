const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * Converts an ISO 8601 date or date-time to UTC with milliseconds (`2026-11-21T09:30:08.276Z`).
 * A date-time without a zone is read as UTC, so the result never depends on the machine's zone.
 * Returns undefined for anything that is not a real ISO 8601 time.
 */
export function normalizeTimestamp(text: string): string | undefined {
  // Most inputs are already in the canonical form (captures, exports): keep them as they are.
  if (isCanonical(text)) return text;
  const match = ISO_8601.exec(text.trim());
  if (match === null) return undefined;
  const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = "", zone = "Z"] = match;
  // Date.parse rolls 2026-02-31 over into March: refuse calendar dates that do not exist.
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (calendar.getUTCMonth() !== Number(month) - 1 || calendar.getUTCDate() !== Number(day) || Number(hour) > 23) return undefined;
  const millis = `${fraction}000`.slice(0, 3);
  const offset = zone.toUpperCase() === "Z" ? "Z" : normalizeOffset(zone);
  const epochMs = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${offset}`);
  if (Number.isNaN(epochMs)) return undefined;
  return new Date(epochMs).toISOString();
}

function normalizeOffset(zone: string): string {
  const digits = zone.slice(1).replace(":", "");
  return `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2, 4) || "00"}`;
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` naming a real instant, checked without building a Date (replay's hot path). */
function isCanonical(text: string): boolean {
  if (!CANONICAL.test(text)) return false;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && !leap ? 28 : (DAYS_IN_MONTH[month - 1] ?? 0);
  return day >= 1 && day <= days && digits(text, 11, 2) <= 23 && digits(text, 14, 2) <= 59 && digits(text, 17, 2) <= 59;
}

/** The number the `count` ASCII digits at `start` write (CANONICAL checked they are digits): read in place, no slice to collect. */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let index = start; index < start + count; index += 1) value = value * 10 + text.charCodeAt(index) - 0x30;
  return value;
}
