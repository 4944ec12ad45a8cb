import { describe, expect, it } from "vitest";
import { explainMismatch } from "../../src/core/explain-signature.js";
import { signBody } from "../../src/core/sign.js";

const SECRET = "s3cret";
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "utf8"));
const compact = '{"version":1,"type":"identify","userId":"u1","traits":{"name":"Zoë 😀","plan":"pro"},"timestamp":"2026-11-21T09:30:08.276Z"}';
const value = JSON.parse(compact) as unknown;

describe("explainMismatch", () => {
  it("says a newline was added when the signature matches the body without its trailing newline", () => {
    const explanation = explainMismatch(SECRET, bytes(`${compact}\n`), signBody(SECRET, compact));
    expect(explanation).toContain("matches the body without its trailing newline");
    expect(explanation).toContain("a newline was added after signing");
  });

  it("says a newline was added for a trailing CRLF too", () => {
    expect(explainMismatch(SECRET, bytes(`${compact}\r\n`), signBody(SECRET, compact))).toContain("a newline was added after signing");
  });

  it("says the final newline was lost when the signature matches the body with one", () => {
    const explanation = explainMismatch(SECRET, bytes(compact), signBody(SECRET, `${compact}\n`));
    expect(explanation).toContain("matches the body with a trailing newline");
    expect(explanation).toContain("the final newline was lost");
  });

  it("says the JSON was re-serialised when a pretty-printed body was signed compactly", () => {
    const pretty = JSON.stringify(value, null, 2);
    const explanation = explainMismatch(SECRET, bytes(pretty), signBody(SECRET, compact));
    expect(explanation).toContain("the signature matches the same JSON serialised compactly (whitespace removed)");
    expect(explanation).toContain("the body was parsed and serialised again before verifying");
  });

  it("names 2-space indentation when a compact body was signed pretty-printed", () => {
    const pretty = JSON.stringify(value, null, 2);
    expect(explainMismatch(SECRET, bytes(compact), signBody(SECRET, pretty))).toContain("serialised with 2-space indentation");
  });

  it("names 4-space indentation when a compact body was signed with 4 spaces", () => {
    expect(explainMismatch(SECRET, bytes(compact), signBody(SECRET, JSON.stringify(value, null, 4)))).toContain("serialised with 4-space indentation");
  });

  it("names sorted keys when the signed body had its keys sorted", () => {
    const sorted = '{"timestamp":"2026-11-21T09:30:08.276Z","traits":{"name":"Zoë 😀","plan":"pro"},"type":"identify","userId":"u1","version":1}';
    expect(explainMismatch(SECRET, bytes(compact), signBody(SECRET, sorted))).toContain("serialised with sorted keys");
  });

  it("names escaped non-ASCII when the signed body had \\u escapes", () => {
    const escaped = compact.replace("Zoë 😀", "Zo\\u00eb \\ud83d\\ude00");
    expect(explainMismatch(SECRET, bytes(compact), signBody(SECRET, escaped))).toContain("serialised with non-ASCII characters escaped");
  });

  it("names escaped slashes when the signed body had \\/", () => {
    const body = '{"type":"page","properties":{"path":"/pricing"}}';
    expect(explainMismatch(SECRET, bytes(body), signBody(SECRET, body.replaceAll("/", "\\/")))).toContain("serialised with slashes escaped");
  });

  it("finds a re-serialisation behind a trailing newline", () => {
    const pretty = `${JSON.stringify(value, null, 2)}\n`;
    expect(explainMismatch(SECRET, bytes(pretty), signBody(SECRET, compact))).toContain("serialised compactly (whitespace removed)");
  });

  it("blames the secret or the body when no usual variant matches", () => {
    expect(explainMismatch(SECRET, bytes(compact), signBody("another secret", compact))).toBe(
      "no usual variant of this body matches: the signature was made with another secret, or over another body",
    );
  });

  it("blames the secret or the body for a body that is not JSON", () => {
    expect(explainMismatch(SECRET, bytes("not json"), signBody("another secret", "not json"))).toContain("made with another secret");
  });

  it("points out a sha1= prefix", () => {
    expect(explainMismatch(SECRET, bytes(compact), `sha1=${signBody(SECRET, compact)}`)).toBe(
      "the signature has a 'sha1=' prefix; X-Signature is the bare 40-character hex digest",
    );
  });

  it("points out a 64-hex signature that looks like HMAC-SHA256", () => {
    expect(explainMismatch(SECRET, bytes(compact), "ab".repeat(32))).toBe(
      "the signature is 64 hex characters, like HMAC-SHA256; X-Signature is HMAC-SHA1 (40 hex characters)",
    );
  });

  it("gives the length of a signature that is not 40 hex characters", () => {
    expect(explainMismatch(SECRET, bytes(compact), "abc")).toBe("the signature is not 40 hexadecimal characters (it has 3 characters)");
  });
});
