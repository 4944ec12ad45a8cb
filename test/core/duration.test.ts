import { describe, expect, it } from "vitest";
import { formatDurationMs, parseDurationMs } from "../../src/core/duration.js";

describe("parseDurationMs", () => {
  it.each([
    ["500ms", 500],
    ["5s", 5_000],
    ["1.5m", 90_000],
    ["4h", 14_400_000],
    ["1d", 86_400_000],
    ["0ms", 0],
    [" 5 s ", 5_000],
    ["0.5s", 500],
  ])("reads %j as %i ms", (text, expected) => {
    expect(parseDurationMs(text)).toBe(expected);
  });

  it.each(["", "s", "-1s", "5x", "5S", "1.2.3s", "five seconds", "5 s 3", ".5s", "5", "250", "0"])("refuses %j", (text) => {
    expect(parseDurationMs(text)).toBeUndefined();
  });
});

describe("formatDurationMs", () => {
  it.each([
    [0, "0ms"],
    [850, "850ms"],
    [2_400, "2.4s"],
    [10_000, "10s"],
    [45_000, "45s"],
    [60_000, "1m"],
    [200_000, "3m 20s"],
    [3_601_000, "1h 1s"],
    [14_400_000, "4h"],
    [5_400_000, "1h 30m"],
  ])("formats %i ms as %j", (ms, expected) => {
    expect(formatDurationMs(ms)).toBe(expected);
  });
});
