import type { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { describe, expect, it } from "vitest";
import { UsageError, verifyRequest } from "../../src/index.js";

// verifyRequest with scheme standard: a tolerance, key rotation, bad secrets. The adapters in their
// real frameworks are in test-packages/frameworks/standard-webhooks-adapters.test.ts.

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const EVENT = '{"type":"track","userId":"u1","event":"Order Completed","messageId":"m-1","properties":{"total":99.5}}';
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** The three headers as an oracle signs them at `seconds`. */
function signedBy(oracle: StandardWebhook | SvixWebhook, id: string, seconds: number, body = EVENT): Record<string, string> {
  return { "webhook-id": id, "webhook-timestamp": String(seconds), "webhook-signature": oracle.sign(id, new Date(seconds * 1000), body) };
}

describe("verifyRequest with scheme standard", () => {
  it("takes a tolerance, and a rotated header whose old signature does not match", () => {
    const seconds = nowSeconds() - 400;
    const headers = signedBy(new SvixWebhook(SECRET), "msg_1", seconds);
    expect(verifyRequest({ body: EVENT, headers, secret: SECRET, scheme: "standard" })).toMatchObject({ ok: false, reason: "timestamp-too-old" });
    expect(verifyRequest({ body: EVENT, headers, secret: SECRET, scheme: "standard", toleranceSeconds: 600 })).toMatchObject({ ok: true });
    const old = signedBy(new SvixWebhook("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "msg_1", seconds)["webhook-signature"];
    const rotated = { ...headers, "webhook-signature": `${old} ${headers["webhook-signature"]}` };
    expect(verifyRequest({ body: EVENT, headers: new Headers(rotated), secret: SECRET, scheme: "standard", toleranceSeconds: 600 })).toMatchObject({
      ok: true,
    });
  });

  it("refuses a secret that is not whsec_, and an unknown scheme, when called", () => {
    const headers = signedBy(new SvixWebhook(SECRET), "msg_1", nowSeconds());
    expect(() => verifyRequest({ body: EVENT, headers, secret: "s3cret", scheme: "standard" })).toThrow(UsageError);
    expect(() => verifyRequest({ body: EVENT, headers, secret: SECRET, scheme: "svix" as never })).toThrow(/scheme must be "segment" or "standard"/);
  });
});
