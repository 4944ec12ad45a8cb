import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookSender } from "../../src/index.js";
import { APPS, post, type RunningApp } from "./receiver-apps.js";

// The receiver adapters with scheme standard, in their real frameworks: what
// wh's sender and both oracles (standardwebhooks, svix) sign passes; an old, tampered or unsigned
// request is answered 401 with its reason, and the app's handler never runs.

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const EVENT = '{"type":"track","userId":"u1","event":"Order Completed","messageId":"m-1","properties":{"total":99.5}}';
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** The three headers as an oracle signs them at `seconds`. */
function signedBy(oracle: StandardWebhook | SvixWebhook, id: string, seconds: number, body = EVENT): Record<string, string> {
  return { "webhook-id": id, "webhook-timestamp": String(seconds), "webhook-signature": oracle.sign(id, new Date(seconds * 1000), body) };
}

describe.each(Object.keys(APPS))("the %s adapter with scheme standard", (name) => {
  let running: RunningApp;
  beforeAll(async () => {
    running = await (APPS[name] as (typeof APPS)[string])({ secret: SECRET, scheme: "standard" });
  });
  afterAll(() => running?.close());

  it("hands the app what wh's sender, standardwebhooks and svix sign", async () => {
    const sender = await createWebhookSender({ webhooks: running.url, sharedSecret: SECRET, scheme: "standard", maxAttempts: 1 });
    try {
      expect((await sender.send(EVENT)).outcome).toBe("delivered");
    } finally {
      await sender.close();
    }
    for (const oracle of [new StandardWebhook(SECRET), new SvixWebhook(SECRET)]) {
      expect(await post(running.url, EVENT, signedBy(oracle, "msg_1", nowSeconds()))).toMatchObject({ status: 200, json: { body: JSON.parse(EVENT) } });
    }
  });

  it("refuses an old timestamp, a tampered id, and a request signed the Segment way", async () => {
    const handled = running.handled;
    const oracle = new StandardWebhook(SECRET);
    // Fastify words a refusal its own way ({ statusCode, error, message }): the reason is in it either way.
    const refusal = async (headers: Record<string, string>) => {
      const { status, json } = await post(running.url, EVENT, headers);
      return { status, reason: /timestamp-too-old|mismatch|missing-signature/.exec(JSON.stringify(json))?.[0] };
    };
    expect(await refusal(signedBy(oracle, "msg_1", nowSeconds() - 600))).toEqual({ status: 401, reason: "timestamp-too-old" });
    expect(await refusal({ ...signedBy(oracle, "msg_1", nowSeconds()), "webhook-id": "msg_2" })).toEqual({ status: 401, reason: "mismatch" });
    expect(await refusal({ "X-Signature": "0".repeat(40) })).toEqual({ status: 401, reason: "missing-signature" });
    expect(running.handled).toBe(handled);
  });
});
