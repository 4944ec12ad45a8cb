import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { basic, eventually, post, servedInTempDirs, signedBodies } from "./serve-helpers.js";

// wh serve answering as Segment's HTTP tracking API does where it differs from a destination's
// rules (segment-docs connections/sources/catalog/libraries/server/http-api).

const receiver = closedAfterEach();
const serve = servedInTempDirs();

const auth = { authorization: basic("wk"), "content-type": "application/json" };

/** A track call's body as the client sends it to /v1/track (no `type`), exactly `bytes` long. */
function trackCallOf(bytes: number, messageId: string): Record<string, unknown> {
  const call = { userId: "u1", event: "Big", messageId, properties: { pad: "" } };
  call.properties.pad = "x".repeat(bytes - JSON.stringify(call).length);
  return call;
}

describe("wh serve as Segment's HTTP API", () => {
  it("answers a single call over 32 KB 400 and keeps nothing of it; the same event in a batch is rejected alone, the batch answered 200", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const over = trackCallOf(33_000, "m-over");

    const single = await post(wh.url, "/v1/track", JSON.stringify(over), auth);
    const batch = await post(
      wh.url,
      "/v1/batch",
      JSON.stringify({
        batch: [
          { ...over, type: "track" },
          { type: "track", userId: "u1", event: "Small", messageId: "m-small" },
        ],
      }),
      auth,
    );

    expect(single).toMatchObject({ status: 400, json: { success: false, code: "body_too_large", message: expect.stringContaining("33000 bytes") } });
    expect(batch).toMatchObject({ status: 200, json: { rejected: 1, errors: [{ where: "batch[0]", messageId: "m-over", reason: "too_large" }] } });
    await eventually(() => hook.requests.length === 1, "the batch's other event");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(signedBodies(hook.requests).map((body) => body.messageId)).toEqual(["m-small"]);
  });

  it("measures a single call by the bytes the client sent: 32 KB that only the `type` wh adds makes larger is taken and delivered", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const call = trackCallOf(32_760, "m-fits");
    expect(JSON.stringify({ ...call, type: "track" }).length).toBeGreaterThan(32_768);

    const answer = await post(wh.url, "/v1/track", JSON.stringify(call), auth);

    expect(answer).toMatchObject({ status: 200, json: { success: true } });
    await eventually(() => hook.requests.length === 1, "the delivery");
    expect(signedBodies(hook.requests)[0]).toMatchObject({ type: "track", messageId: "m-fits" });
  });

  it("fills context.ip from the request when the call says context.direct: true, whatever its library", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--mode", "actions"]);
    const library = { name: "analytics-python", version: "2.3.4" };

    await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Direct", messageId: "m-direct", context: { library, direct: true } }), auth);
    await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Server", messageId: "m-server", context: { library } }), auth);

    await eventually(() => hook.requests.length === 2, "both deliveries");
    const byId = new Map(signedBodies(hook.requests).map((body) => [body.messageId, body.context as Record<string, unknown>]));
    expect(byId.get("m-direct")).toEqual({ library, direct: true, ip: "127.0.0.1" });
    expect(byId.get("m-server")?.ip).toBeUndefined();
  });

  it.each(["classic", "actions"])("takes a page whose properties.url is not a string, and delivers it (%s mode)", async (mode) => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--mode", mode]);

    const answer = await post(
      wh.url,
      "/v1/page",
      JSON.stringify({ userId: "u1", name: "Home", messageId: "m-page", properties: { url: 42, title: true } }),
      auth,
    );

    expect(answer).toMatchObject({ status: 200, json: { success: true } });
    await eventually(() => hook.requests.length === 1, "the delivery");
    expect(signedBodies(hook.requests)[0]).toMatchObject({ type: "page", messageId: "m-page", properties: { url: 42, title: true } });
  });
});
