import { describe, expect, it } from "vitest";
import { canonicalMs, isoFromMs, normalizeTimestamp } from "../../src/core/message/timestamp.js";

describe("normalizeTimestamp", () => {
  it.each([
    ["2026-11-21T09:30:08.276Z", "2026-11-21T09:30:08.276Z"],
    ["2026-11-21T10:30:08+01:00", "2026-11-21T09:30:08.000Z"],
    ["2026-11-21T09:30:08.5Z", "2026-11-21T09:30:08.500Z"],
    ["2026-11-21T09:30:08.123456789Z", "2026-11-21T09:30:08.123Z"],
    ["2026-11-21T09:30:08,25Z", "2026-11-21T09:30:08.250Z"],
    ["2026-11-21", "2026-11-21T00:00:00.000Z"],
    ["2026-11-21T09:30:08", "2026-11-21T09:30:08.000Z"],
    ["2026-11-21T09:30", "2026-11-21T09:30:00.000Z"],
    ["2026-11-21 09:30:08Z", "2026-11-21T09:30:08.000Z"],
    ["2026-11-21t09:30:08z", "2026-11-21T09:30:08.000Z"],
    ["2026-11-21T09:30:08+0530", "2026-11-21T04:00:08.000Z"],
    ["2026-11-21T09:30:08-05", "2026-11-21T14:30:08.000Z"],
    ["2026-11-21T00:30:00+01:00", "2026-11-20T23:30:00.000Z"],
    ["2026-11-21T23:30:00-01:00", "2026-11-22T00:30:00.000Z"],
    ["2028-02-29", "2028-02-29T00:00:00.000Z"],
    [" 2026-11-21T09:30:08Z ", "2026-11-21T09:30:08.000Z"],
  ])("converts %j to %s", (input, expected) => {
    expect(normalizeTimestamp(input)).toBe(expected);
  });

  it.each([
    "2026-02-31",
    "2026-02-29",
    "yesterday",
    "",
    "2026-11-21T25:00:00Z",
    "2026-11-21T24:00:00Z",
    "2026-11-21T09:60:00Z",
    "2026-11-21T09:30:60Z",
    "2026-11-21T09:30:08+25:00",
    "2026-13-01",
    "21/11/2026",
    "1763717408276",
    // A date that does not exist is refused whatever the zone, not rolled over into March.
    "2026-02-31T10:00:00+01:00",
    "2026-02-29T00:30:00-05:00",
  ])("rejects %j", (input) => {
    expect(normalizeTimestamp(input)).toBeUndefined();
  });
});

describe("normalizeTimestamp on the canonical form", () => {
  it.each(["2024-02-29T00:00:00.000Z", "2026-12-31T23:59:59.999Z", "2000-02-29T12:00:00.000Z"])("keeps %s as it is", (input) => {
    expect(normalizeTimestamp(input)).toBe(input);
  });

  it.each([
    "2026-02-29T00:00:00.000Z",
    "1900-02-29T00:00:00.000Z",
    "2026-11-31T00:00:00.000Z",
    "2026-13-01T00:00:00.000Z",
    "2026-00-10T00:00:00.000Z",
    "2026-11-00T00:00:00.000Z",
    "2026-11-21T24:00:00.000Z",
    "2026-11-21T23:60:00.000Z",
    "2026-11-21T23:59:60.000Z",
  ])("refuses %s, which looks canonical but names no real time", (input) => {
    expect(normalizeTimestamp(input)).toBeUndefined();
  });
});

describe("isoFromMs and canonicalMs, accept's own toISOString and Date.parse", () => {
  const edges = [
    "1000-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z",
    "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00.000Z",
    "1900-02-28T23:59:59.999Z",
    "1900-03-01T00:00:00.000Z",
    "2000-02-29T12:00:00.001Z",
    "2100-03-01T00:00:00.000Z",
    "2026-11-27T14:10:56.123Z",
  ].map(Date.parse);

  it("writes every instant as toISOString does, by the ms about the edges and across the years 1000 to 9999", () => {
    const instants = [...edges.flatMap((ms) => [ms - 1, ms, ms + 1]), 0];
    for (let ms = Date.UTC(1000, 0, 1); ms < Date.UTC(10_000, 0, 1); ms += 86_400_000 * 37 + 3_661_001) instants.push(ms);
    // Outside the four-digit years, and a fraction of a ms: toISOString's own answer.
    instants.push(Date.UTC(999, 11, 31, 23, 59, 59, 999), Date.UTC(10_000, 0, 1), -62_198_755_200_000, 1.5);
    expect(instants.filter((ms) => isoFromMs(ms) !== new Date(ms).toISOString())).toEqual([]);
  });

  it("reads every canonical timestamp as Date.parse does, the years 0 to 99 too", () => {
    const texts = [
      ...edges.map((ms) => new Date(ms).toISOString()),
      "0000-01-01T00:00:00.000Z",
      "0050-06-15T12:34:56.789Z",
      "0099-12-31T23:59:59.999Z",
      "0100-01-01T00:00:00.000Z",
    ];
    for (const text of texts) expect(canonicalMs(text)).toBe(Date.parse(text));
  });
});
