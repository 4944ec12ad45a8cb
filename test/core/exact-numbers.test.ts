import { describe, expect, it } from "vitest";
import { inexactNumberProblem } from "../../src/core/message/exact-numbers.js";

describe("inexactNumberProblem", () => {
  it.each([
    ["12345678901234567890", "12345678901234567000"],
    ["1e400", "null"],
    ["-1e400", "null"],
    ["1e-400", "0"],
    ["9007199254740993", "9007199254740992"],
    ["3.14159265358979323846", "3.141592653589793"],
    ["0.1000000000000000055511151231257827", "0.1"],
  ])("refuses %s, saying what it would become", (number, becomes) => {
    expect(inexactNumberProblem(`{"n":${number}}`)).toBe(`the number ${number} cannot be sent exactly (it would become ${becomes}); send it as a string`);
  });

  it.each([
    "0",
    "-0",
    "1.10",
    "1e3",
    "1E+3",
    "2.5e-3",
    "9007199254740992",
    "0.30000000000000004",
    "123456789012345",
    "1.7976931348623157e308",
    "5e-324",
    "100000000000000000000",
    "0.000001",
  ])("keeps %s, whose value a double holds exactly as written", (number) => {
    expect(inexactNumberProblem(`{"n":${number},"list":[${number}]}`)).toBeUndefined();
  });

  it("ignores digits inside strings, escaped quotes included", () => {
    expect(inexactNumberProblem('{"id":"12345678901234567890","k\\"1e400":"a\\"1e400","12345678901234567890":1}')).toBeUndefined();
  });

  it("names the first inexact number of several, and shortens a long one", () => {
    const long = "1".repeat(60);
    expect(inexactNumberProblem(`[1, ${long}, 1e400]`)).toMatch(new RegExp(`^the number ${"1".repeat(40)}… cannot be sent exactly`));
  });

  it("finds a number after any JSON whitespace, in arrays and objects alike", () => {
    expect(inexactNumberProblem('{ "a" :\r\n\t 1e400 }')).toMatch(/^the number 1e400 /);
    expect(inexactNumberProblem("[\n -12345678901234567890]")).toMatch(/^the number -12345678901234567890 /);
    expect(inexactNumberProblem('{"a":[0,\n1e-400]}')).toMatch(/^the number 1e-400 /);
  });

  it("checks a text again after a refusal (no state left from the last call)", () => {
    expect(inexactNumberProblem('{"a":"x","n":1e400}')).toBeDefined();
    expect(inexactNumberProblem('{"n":1}')).toBeUndefined();
  });
});
