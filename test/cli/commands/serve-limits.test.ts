import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { basic, eventually, post, servedInTempDirs, signedBodies } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

const auth = { authorization: basic("wk"), "content-type": "application/json" };

/** A track event whose compact JSON, as the client sends it, is exactly `bytes` long. */
function eventOf(bytes: number, messageId: string): Record<string, unknown> {
  const event = { type: "track", userId: "u1", event: "Big", messageId, properties: { pad: "" } };
  event.properties.pad = "x".repeat(bytes - JSON.stringify(event).length);
  return event;
}

describe("wh serve's limits, as Segment's tracking API measures them", () => {
  it("takes an event of 32 KiB as the SDK sent it, and delivers it though the pipeline made it larger; one byte more is rejected", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const batch = [eventOf(32_768, "m-fits"), eventOf(32_769, "m-over")];
    const answer = await post(wh.url, "/v1/batch", JSON.stringify({ batch }), auth);
    expect(answer).toMatchObject({
      status: 200,
      json: {
        rejected: 1,
        errors: [{ where: "batch[1]", messageId: "m-over", reason: "too_large", message: "message is 32769 bytes of JSON; the limit is 32768 bytes (32 KB)" }],
      },
    });
    await eventually(() => hook.requests.length === 1, "the delivery");
    const [delivered] = signedBodies(hook.requests);
    expect(delivered).toMatchObject({ messageId: "m-fits" });
    expect(hook.requests[0]?.body.length).toBeGreaterThan(32_768);
  });

  it("answers a request without a write key 401 no_write_key, with flat settings too", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const answer = await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "E" }));
    expect(answer).toMatchObject({ status: 401, json: { success: false, code: "no_write_key" } });
    expect((await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "E", writeKey: "wk" }))).status).toBe(200);
  });

  it("delivers the first 2,500 events of a larger batch and rejects the rest, each by its place", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--concurrency", "50"]);
    const batch = Array.from({ length: 2_501 }, (_, index) => ({ type: "track", userId: `u${index % 50}`, event: "E", messageId: `m-${index}` }));
    const answer = await post(wh.url, "/v1/batch", JSON.stringify({ batch }), auth);
    expect(answer).toMatchObject({ status: 200, json: { rejected: 1, errors: [{ where: "batch[2500]", messageId: "m-2500", reason: "over_batch_limit" }] } });
    await eventually(() => hook.requests.length === 2_500, "2,500 deliveries");
    expect(new Set(signedBodies(hook.requests).map((body) => body.messageId)).has("m-2500")).toBe(false);
  });
});
