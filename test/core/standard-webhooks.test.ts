import { randomBytes } from "node:crypto";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { describe, expect, it } from "vitest";
import { signStandard, standardHeaders, standardKeys, verifyStandard, webhookIdOf, type StandardHeaderValues } from "../../src/core/standard-webhooks.js";

// The oracles: the Standard Webhooks reference library and Svix's SDK. What each signs, wh must
// verify; what wh signs, each must verify.

const newSecret = (): string => `whsec_${randomBytes(24).toString("base64")}`;
const secret = newSecret();
const body = '{"type":"track","event":"Order Completed","messageId":"ajs-1","properties":{"total":12.5,"name":"café"}}';
const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
const nowMs = 1_674_087_231_000;
const seconds = nowMs / 1000;

const valuesOf = (headers: Record<string, string>): StandardHeaderValues => ({
  id: headers["webhook-id"],
  timestamp: headers["webhook-timestamp"],
  signature: headers["webhook-signature"],
});

const oracles = [
  ["standardwebhooks", (key: string) => new StandardWebhook(key)],
  ["svix", (key: string) => new SvixWebhook(key)],
] as const;

describe.each(oracles)("against %s", (_name, make) => {
  it("wh verifies what it signs, the body as a string and as bytes", () => {
    const signature = make(secret).sign(id, new Date(nowMs), body);
    const headers = { id, timestamp: String(seconds), signature };
    expect(verifyStandard(secret, headers, body, { nowMs })).toEqual({ ok: true });
    expect(verifyStandard(secret, headers, Buffer.from(body), { nowMs })).toEqual({ ok: true });
    expect(signStandard(secret, id, seconds, body)).toBe(signature);
  });

  it("verifies what wh signs (at the current time: the oracles read the clock)", () => {
    const headers = standardHeaders(secret, webhookIdOf(body), Date.now(), body);
    // svix returns nothing and standardwebhooks the parsed body: both throw on a refusal.
    expect(() => make(secret).verify(body, headers)).not.toThrow();
  });

  it("refuses what wh signs with another secret", () => {
    const headers = standardHeaders(newSecret(), "msg_1", Date.now(), body);
    expect(() => make(secret).verify(body, headers)).toThrow(/signature/i);
  });
});

describe("key rotation: several signatures in one header", () => {
  const oldSecret = newSecret();
  const rotated = `${signStandard(oldSecret, id, seconds, body)} ${signStandard(secret, id, seconds, body)}`;

  it("verifies with either secret, in wh and in both oracles", () => {
    const headers = { id, timestamp: String(seconds), signature: rotated };
    expect(verifyStandard(oldSecret, headers, body, { nowMs })).toEqual({ ok: true });
    expect(verifyStandard(secret, headers, body, { nowMs })).toEqual({ ok: true });
    const now = { ...valuesOf(standardHeaders(secret, id, Date.now(), body)) };
    const both = `${signStandard(oldSecret, id, Number(now.timestamp), body)} ${now.signature}`;
    const wire = { "webhook-id": id, "webhook-timestamp": now.timestamp!, "webhook-signature": both };
    for (const [, make] of oracles) for (const key of [oldSecret, secret]) expect(() => make(key).verify(body, wire)).not.toThrow();
  });

  it("signs with each of several space-separated secrets, and verifies with any of them, both oracles agreeing", () => {
    const signature = signStandard(`${secret} ${oldSecret}`, id, seconds, body);
    expect(signature).toBe(rotated.split(" ").reverse().join(" "));
    expect(verifyStandard(`${newSecret()} ${oldSecret}`, { id, timestamp: String(seconds), signature: rotated }, body, { nowMs })).toEqual({ ok: true });
    const now = Math.floor(Date.now() / 1000);
    const wire = { "webhook-id": id, "webhook-timestamp": String(now), "webhook-signature": signStandard(`${secret} ${oldSecret}`, id, now, body) };
    for (const [, make] of oracles) for (const key of [oldSecret, secret]) expect(() => make(key).verify(body, wire)).not.toThrow();
    expect(() => standardKeys(`${secret} plain`, "--secret")).toThrow(/starts with whsec_/);
  });

  it("refuses a third secret, and skips other versions (v1a) and junk entries", () => {
    expect(verifyStandard(newSecret(), { id, timestamp: String(seconds), signature: rotated }, body, { nowMs })).toEqual({ ok: false, reason: "mismatch" });
    const mixed = `v1a,${randomBytes(64).toString("base64")} junk ${signStandard(secret, id, seconds, body)}`;
    expect(verifyStandard(secret, { id, timestamp: String(seconds), signature: mixed }, body, { nowMs })).toEqual({ ok: true });
    expect(verifyStandard(secret, { id, timestamp: String(seconds), signature: "v1a,abcd v2,abcd" }, body, { nowMs })).toEqual({
      ok: false,
      reason: "malformed-signature",
    });
  });
});

describe("the timestamp tolerance", () => {
  const at = (offsetSeconds: number, toleranceSeconds?: number) => {
    const signedAt = seconds + offsetSeconds;
    const headers = { id, timestamp: String(signedAt), signature: signStandard(secret, id, signedAt, body) };
    return verifyStandard(secret, headers, body, { nowMs, toleranceSeconds });
  };

  it("accepts exactly 5 minutes either way and refuses one second more, as the oracles do", () => {
    expect(at(-300)).toEqual({ ok: true });
    expect(at(300)).toEqual({ ok: true });
    expect(at(-301)).toEqual({ ok: false, reason: "timestamp-too-old" });
    expect(at(301)).toEqual({ ok: false, reason: "timestamp-too-new" });
  });

  it("agrees with standardwebhooks at its edges (its clock: the current second)", () => {
    const oracle = new StandardWebhook(secret);
    const check = (offset: number): boolean => {
      const signedAt = Math.floor(Date.now() / 1000) + offset;
      const headers = { "webhook-id": id, "webhook-timestamp": String(signedAt), "webhook-signature": signStandard(secret, id, signedAt, body) };
      try {
        oracle.verify(body, headers);
        return true;
      } catch {
        return false;
      }
    };
    // One second inside each edge: the clock may tick between signing and verifying.
    expect([check(-299), check(299), check(-302), check(302)]).toEqual([true, true, false, false]);
  });

  it("takes another tolerance", () => {
    expect(at(-30, 10)).toEqual({ ok: false, reason: "timestamp-too-old" });
    expect(at(-10, 10)).toEqual({ ok: true });
  });
});

describe("tampering", () => {
  const headers = valuesOf(standardHeaders(secret, id, nowMs, body));

  it("refuses another id, another timestamp (still within the tolerance) or another body", () => {
    expect(verifyStandard(secret, { ...headers, id: "msg_other" }, body, { nowMs })).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyStandard(secret, { ...headers, timestamp: String(seconds - 1) }, body, { nowMs })).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyStandard(secret, headers, body.replace("12.5", "12.6"), { nowMs })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses missing headers, an id with a dot, and a timestamp that is not whole seconds", () => {
    expect(verifyStandard(secret, { ...headers, id: undefined }, body, { nowMs })).toEqual({ ok: false, reason: "missing-signature" });
    expect(verifyStandard(secret, { ...headers, signature: undefined }, body, { nowMs })).toEqual({ ok: false, reason: "missing-signature" });
    expect(verifyStandard(secret, { ...headers, id: "a.b" }, body, { nowMs })).toEqual({ ok: false, reason: "malformed-signature" });
    expect(verifyStandard(secret, { ...headers, timestamp: `${seconds}.5` }, body, { nowMs })).toEqual({ ok: false, reason: "malformed-signature" });
  });
});

describe("secrets and ids", () => {
  it("refuses a secret that is not whsec_ and base64, naming the setting and never the secret", () => {
    expect(() => standardKeys("my-segment-secret", "--secret")).toThrow(/^--secret is not a Standard Webhooks secret: .*starts with whsec_/);
    expect(() => standardKeys("whsec_not base64!", "sharedSecret")).toThrow(/^sharedSecret is not a Standard Webhooks secret: .*base64/);
    expect(() => standardKeys("whsec_", "secret")).toThrow(/base64/);
    expect(standardKeys("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").map((key) => key.length)).toEqual([24]);
  });

  it("takes the event's messageId as webhook-id, else a hash of the body, the same every time", () => {
    expect(webhookIdOf(body)).toBe("ajs-1");
    const batch = `[${body}]`;
    expect(webhookIdOf(batch)).toMatch(/^msg_[A-Za-z0-9_-]{27}$/);
    expect(webhookIdOf(batch)).toBe(webhookIdOf(Buffer.from(batch)));
    expect(webhookIdOf('{"messageId":"has.dot"}')).toMatch(/^msg_/);
  });
});
