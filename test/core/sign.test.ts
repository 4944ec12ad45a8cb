import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SIGNATURE_HEADER, signBody, verifySignature } from "../../src/core/sign.js";

interface Vector {
  secret: string;
  body: string;
  signature: string;
}

const { vectors } = JSON.parse(readFileSync(new URL("../../fixtures/signatures.json", import.meta.url), "utf8")) as { vectors: Vector[] };
const first = vectors[0]!;

describe("signBody", () => {
  it("has five known-answer vectors to check", () => {
    expect(vectors).toHaveLength(5);
  });

  it.each(vectors.map((vector, index) => [index, vector] as const))("matches openssl for vector %i (string body)", (_index, vector) => {
    expect(signBody(vector.secret, vector.body)).toBe(vector.signature);
  });

  it.each(vectors.map((vector, index) => [index, vector] as const))("matches openssl for vector %i (UTF-8 bytes)", (_index, vector) => {
    expect(signBody(vector.secret, new Uint8Array(Buffer.from(vector.body, "utf8")))).toBe(vector.signature);
  });

  it("signs with whichever secret it is given when secrets alternate", () => {
    const a = first;
    const b = vectors.find((vector) => vector.secret !== a.secret)!;
    for (let round = 0; round < 3; round += 1) {
      expect(signBody(a.secret, a.body)).toBe(a.signature);
      expect(signBody(b.secret, b.body)).toBe(b.signature);
      expect(verifySignature(a.secret, a.body, a.signature)).toEqual({ ok: true });
      expect(verifySignature(b.secret, a.body, a.signature)).toEqual({ ok: false, reason: "mismatch" });
    }
  });

  it("signs with each of many secrets, more than it keeps keys for, in turn", () => {
    const secrets = Array.from({ length: 40 }, (_, index) => `secret-${index}`);
    for (let round = 0; round < 2; round += 1) {
      for (const secret of secrets) expect(signBody(secret, "{}")).toBe(createHmac("sha1", secret).update("{}").digest("hex"));
    }
  });

  it("keys with the secret's UTF-8 bytes, an empty secret included", () => {
    expect(signBody("sécret ✓", "{}")).toBe(createHmac("sha1", Buffer.from("sécret ✓", "utf8")).update("{}").digest("hex"));
    expect(signBody("", "{}")).toBe(createHmac("sha1", Buffer.alloc(0)).update("{}").digest("hex"));
  });

  it("returns 40 lowercase hex characters", () => {
    expect(signBody("S", "{}")).toMatch(/^[0-9a-f]{40}$/);
  });

  it("names the header X-Signature", () => {
    expect(SIGNATURE_HEADER).toBe("X-Signature");
  });
});

describe("verifySignature", () => {
  it.each(vectors.map((vector, index) => [index, vector] as const))("accepts the known signature of vector %i", (_index, vector) => {
    expect(verifySignature(vector.secret, vector.body, vector.signature)).toEqual({ ok: true });
    expect(verifySignature(vector.secret, Buffer.from(vector.body, "utf8"), vector.signature)).toEqual({ ok: true });
  });

  it("accepts upper-case hex of the right digest", () => {
    expect(verifySignature(first.secret, first.body, first.signature.toUpperCase())).toEqual({ ok: true });
  });

  it("reports a wrong digest as a mismatch", () => {
    const last = first.signature.at(-1) === "0" ? "1" : "0";
    const wrong = first.signature.slice(0, -1) + last;
    expect(verifySignature(first.secret, first.body, wrong)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("reports another secret's signature as a mismatch", () => {
    expect(verifySignature("other", first.body, first.signature)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("reports one changed body byte as a mismatch", () => {
    expect(verifySignature(first.secret, `${first.body}\n`, first.signature)).toEqual({ ok: false, reason: "mismatch" });
  });

  it.each([
    ["an empty string", ""],
    ["a short word", "abc"],
    ["39 hex characters", first.signature.slice(0, 39)],
    ["41 hex characters", `${first.signature}0`],
    ["40 non-hex characters", "g".repeat(40)],
    ["40 characters with one non-hex", `${first.signature.slice(0, 39)}z`],
    ["a sha1= prefix", `sha1=${first.signature}`],
    ["a 64-hex SHA-256-sized digest", "a".repeat(64)],
    ["40 non-ASCII characters", "é".repeat(40)],
  ])("reports %s as a malformed signature without throwing", (_label, signature) => {
    expect(verifySignature(first.secret, first.body, signature)).toEqual({ ok: false, reason: "malformed-signature" });
  });
});
