import { describe, expect, it } from "vitest";
import { explainMismatch } from "../../src/core/explain-signature.js";
import { JsonNestingError, MAX_JSON_DEPTH, parseJson, parseJsonOrThrow } from "../../src/core/message/parse-json.js";
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
