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

/**
 * The instant a timestamp that normalizeTimestamp returned names, in ms since the epoch: read from
 * its digits (Date.parse cost 4 times as much, on accept's hot path).
 */
export function canonicalMs(canonical: string): number {
  const year = digits(canonical, 0, 4);
  // Date.UTC reads the years 0 to 99 as 1900 to 1999.
  if (year < 100) return Date.parse(canonical);
  const time = digits(canonical, 11, 2) * 3_600_000 + digits(canonical, 14, 2) * 60_000 + digits(canonical, 17, 2) * 1_000 + digits(canonical, 20, 3);
  return Date.UTC(year, digits(canonical, 5, 2) - 1, digits(canonical, 8, 2)) + time;
}

/** The first and last ms of the years 1000 to 9999, whose ISO text has 4 digits of year and no sign. */
const FOUR_DIGIT_YEARS = [Date.UTC(1000, 0, 1), Date.UTC(10_000, 0, 1) - 1] as const;
const DAY_MS = 86_400_000;

/**
 * `new Date(ms).toISOString()`, written without a Date: toISOString cost 360 ns and 200 bytes an
 * event on accept's hot path; this, 90 ns and one string of 24 characters (a template literal of
 * its parts cost 130 ns and 480 bytes of intermediate strings). Outside the years 1000 to 9999 it
 * is toISOString's.
 */
export function isoFromMs(ms: number): string {
  if (!(ms >= FOUR_DIGIT_YEARS[0] && ms <= FOUR_DIGIT_YEARS[1]) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const days = Math.floor(ms / DAY_MS);
  const inDay = ms - days * DAY_MS;
  // The civil date of a day count (Howard Hinnant's days_from_civil, inverted), in 400-year eras from 0000-03-01.
  const shifted = days + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const fromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * fromMarch + 2) / 5) + 1;
  const month = fromMarch < 10 ? fromMarch + 3 : fromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1_000) % 60;
  const millis = inDay % 1_000;
  // biome-ignore format: one character a place, as the text reads: the date, the time, its fraction
  return String.fromCharCode(
    digit(year, 1000), digit(year, 100), digit(year, 10), digit(year, 1), DASH, digit(month, 10), digit(month, 1), DASH, digit(day, 10), digit(day, 1),
    LETTER_T, digit(hours, 10), digit(hours, 1), COLON, digit(minutes, 10), digit(minutes, 1), COLON, digit(seconds, 10), digit(seconds, 1),
    POINT, digit(millis, 100), digit(millis, 10), digit(millis, 1), LETTER_Z,
  );
}

const [DASH, LETTER_T, COLON, POINT, LETTER_Z] = [0x2d, 0x54, 0x3a, 0x2e, 0x5a];

/** The character code of the decimal digit of `value` at `place` (1, 10, 100, 1000). */
function digit(value: number, place: number): number {
  return 0x30 + (Math.floor(value / place) % 10);
}
