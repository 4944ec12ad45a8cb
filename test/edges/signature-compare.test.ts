import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signBody, verifyBody, verifyRequest, verifySignature } from "../../src/index.js";

// Constant time cannot be measured honestly in a test (a timing difference of one byte is lost in
// the noise), so this holds the code path that gives it: every signature that reaches the
// comparison is compared by crypto.timingSafeEqual, over two digests of the same 20 bytes,
// whichever byte differs; none is compared any other way (===, Buffer.equals), and a signature
// of another length never reaches a comparison (it is malformed before one).

const SECRET = "whsec-compare";
const BODY = '{"type":"track","event":"Signed Up"}';

// node:crypto's timingSafeEqual, watched: the named export every importer sees is replaced (in
// this process, for this file's tests only) by one that records its arguments' lengths.
const original = crypto.timingSafeEqual;
const compared: [number, number][] = [];
beforeAll(() => {
  crypto.timingSafeEqual = (a, b) => {
    compared.push([a.byteLength, b.byteLength]);
    return original(a, b);
  };
  syncBuiltinESMExports();
});
afterAll(() => {
  crypto.timingSafeEqual = original;
  syncBuiltinESMExports();
});
afterEach(() => {
  compared.length = 0;
});

/** The right signature with the hex digit at `at` changed. */
function changedAt(at: number): string {
  const right = signBody(SECRET, BODY);
  const digit = right[at] === "0" ? "1" : "0";
  return `${right.slice(0, at)}${digit}${right.slice(at + 1)}`;
}

describe("the signature compare", () => {
  it("compares a right signature, and one wrong in its first or its last digit, with timingSafeEqual over 20 bytes each", () => {
    expect(verifySignature(SECRET, BODY, signBody(SECRET, BODY))).toEqual({ ok: true });
    expect(verifySignature(SECRET, BODY, changedAt(0))).toEqual({ ok: false, reason: "mismatch" });
    expect(verifySignature(SECRET, BODY, changedAt(39))).toEqual({ ok: false, reason: "mismatch" });
    expect(compared).toEqual([
      [20, 20],
      [20, 20],
      [20, 20],
    ]);
  });

  it("the receivers' verifyRequest and wh listen's verifyBody compare through it too", () => {
    const headers = { "x-signature": changedAt(7) };
    expect(verifyRequest({ body: BODY, headers, secret: SECRET })).toMatchObject({ ok: false, status: 401, reason: "mismatch" });
    expect(verifyBody(SECRET, BODY, changedAt(7))).toEqual({ ok: false, reason: "mismatch" });
    expect(compared).toEqual([
      [20, 20],
      [20, 20],
    ]);
  });

  it("never compares a signature of another length: it is malformed first", () => {
    const right = signBody(SECRET, BODY);
    const within = (text: string) => `${right.slice(0, 20)}${text}${right.slice(20 + text.length)}`;
    for (const signature of [right.slice(0, 38), `${right}00`, "", `${right.slice(0, 39)}g`, `g${right.slice(1)}`, within("zz"), within("é"), within(" ")]) {
      expect(verifySignature(SECRET, BODY, signature)).toEqual({ ok: false, reason: "malformed-signature" });
    }
    expect(compared).toEqual([]);
  });
});
