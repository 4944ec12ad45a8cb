import { describe, expect, it } from "vitest";
import { explainMismatch } from "../../src/core/explain-signature.js";
import { JsonNestingError, MAX_JSON_DEPTH, parseJson, parseJsonNumbers, parseJsonOrThrow } from "../../src/core/message/parse-json.js";
import { signBody, verifyBody } from "../../src/core/sign.js";

const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const DEEP = nested(5_000);

describe("the depth-guarded JSON parser", () => {
  it("parses JSON nested MAX_JSON_DEPTH deep and refuses one level more", () => {
    expect(parseJsonOrThrow(nested(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    expect(() => parseJsonOrThrow(nested(MAX_JSON_DEPTH + 1))).toThrow(JsonNestingError);
    expect(() => parseJsonOrThrow(nested(MAX_JSON_DEPTH + 1))).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it("counts no bracket inside a string, whatever its escapes, and every one after it", () => {
    const deepInside = (quoted: string): string => `{"k":${JSON.stringify(quoted)},"v":${nested(MAX_JSON_DEPTH)}}`;
    // Brackets in strings ending in an escaped quote, an escaped backslash, or three backslashes and a quote.
    for (const quoted of [`${"[".repeat(400)}"`, `${"[".repeat(400)}\\`, `\\"${"{".repeat(400)}`, "plain"]) {
      expect(() => parseJsonOrThrow(deepInside(quoted))).toThrow(JsonNestingError);
      expect(parseJsonOrThrow(`[${JSON.stringify(quoted)},${nested(MAX_JSON_DEPTH - 1)}]`)).toHaveLength(2);
    }
    // An unterminated string is JSON.parse's to refuse.
    expect(() => parseJsonOrThrow(`["${"[".repeat(600)}`)).toThrow(SyntaxError);
  });

  it("judges a text past twice the limit at the limit alike whether its brackets are few enough to skip the scan or not", () => {
    const pad = "x".repeat(2 * MAX_JSON_DEPTH);
    // No more brackets than the limit: the count settles it, no scan.
    const fewAt = `{"pad":"${pad}","v":${nested(MAX_JSON_DEPTH - 1)}}`;
    const fewOver = `{"pad":"${pad}","v":${nested(MAX_JSON_DEPTH)}}`;
    // Brackets beside the deepest (and inside a string) push the count past the limit: scanned.
    const manyAt = `{"pad":"${"[".repeat(300)}","w":[${"[],".repeat(300)}[]],"v":${nested(MAX_JSON_DEPTH - 1)}}`;
    const manyOver = `{"pad":"${"[".repeat(300)}","w":[${"[],".repeat(300)}[]],"v":${nested(MAX_JSON_DEPTH)}}`;
    for (const parse of [parseJson, parseJsonNumbers]) {
      expect(parse(fewAt)).toMatchObject({ ok: true });
      expect(parse(manyAt)).toMatchObject({ ok: true });
      expect(parse(fewOver)).toEqual({ ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` });
      expect(parse(manyOver)).toEqual({ ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` });
      // Too short to nest past the limit and close: JSON.parse's verdict, not the nesting's.
      expect(parse("[".repeat(2 * MAX_JSON_DEPTH))).toMatchObject({ ok: false, error: expect.stringMatching(/^invalid JSON: /) });
    }
  });

  it("flags the numbers inexactNumberProblem looks at (more than 15 characters, or an exponent) and no others", () => {
    const flagged = (text: string): boolean | undefined => {
      const parsed = parseJsonNumbers(text);
      return parsed.ok ? parsed.numbersToCheck : undefined;
    };
    for (const text of ["[123456789012345]", "[-12345678901234]", "[1.2345678901234]", '{"id":"12345678901234567890e5"}', "[true,false,null]", "[0]"])
      expect(flagged(text)).toBe(false);
    for (const text of ["[1234567890123456]", "[-123456789012345]", "[1e3]", "[2E-1]", '{"a":[1,{"b":12345678901234567890}]}', "[ 9007199254740993 ]"])
      expect(flagged(text)).toBe(true);
    // A long text, scanned for its nesting as well.
    expect(flagged(`{"pad":"${"x".repeat(600)}","n":1e400}`)).toBe(true);
    expect(parseJsonNumbers("[1e3")).toMatchObject({ ok: false, error: expect.stringMatching(/^invalid JSON: /) });
  });

  it("throws a SyntaxError as JSON.parse does for text that is not JSON", () => {
    expect(() => parseJsonOrThrow("{nope")).toThrow(SyntaxError);
  });

  it("keeps parseJson's result shape", () => {
    expect(parseJson('{"a":[1]}')).toEqual({ ok: true, value: { a: [1] } });
    expect(parseJson(DEEP)).toEqual({ ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` });
    expect(parseJson("{nope")).toMatchObject({ ok: false, error: expect.stringMatching(/^invalid JSON: /) });
  });
});

describe("signatures over a 5,000-deep body", () => {
  it("verify and explain without overflowing the stack", () => {
    expect(verifyBody("s", Buffer.from(DEEP), signBody("s", DEEP))).toMatchObject({ ok: true });
    expect(verifyBody("s", Buffer.from(DEEP), signBody("other", DEEP))).toMatchObject({ ok: false });
    expect(explainMismatch("s", Buffer.from(DEEP), signBody("other", DEEP))).toContain("another secret");
  });
});
