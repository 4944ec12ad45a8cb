import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { lines, STACK_TRACE } from "../../helpers/run-wh.js";
import { basic, eventually, post, sdk, servedInTempDirs, signedBodies } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

describe("wh serve takes a request event by event, as Segment's tracking API does", () => {
  it("delivers the 14 good events of an analytics-node batch and reports the one invalid event loudly", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const analytics = sdk(wh.url);
    for (let index = 0; index < 7; index += 1) analytics.track({ userId: "u1", event: `Good ${index}` });
    analytics.track({ userId: "u1", event: "", messageId: "the-bad-one" });
    for (let index = 7; index < 14; index += 1) analytics.track({ userId: "u1", event: `Good ${index}` });
    await analytics.closeAndFlush();
    await eventually(() => hook.requests.length === 14, "14 deliveries");
    expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(Array.from({ length: 14 }, (_, index) => `Good ${index}`));
    // One batch, answered 200: the SDK does not retry it.
    const records = lines(wh.stdout()).map((line) => JSON.parse(line) as { request?: Record<string, unknown> });
    const requests = records.flatMap((record) => (record.request === undefined ? [] : [record.request]));
    expect(requests).toEqual([
      expect.objectContaining({
        status: 200,
        accepted: 14,
        rejected: [{ where: "batch[7]", messageId: "the-bad-one", reason: "invalid_message", error: "You must pass 'event'." }],
      }),
    ]);
    expect(wh.stderr()).toContain("✗ batch[7] (messageId the-bad-one) rejected: You must pass 'event'.");
    expect(wh.stderr()).toContain("14 events accepted, 1 rejected");
    const metrics = await (await fetch(`${wh.url}/metrics`)).text();
    expect(metrics).toMatch(/^wh_serve_events_rejected_total\{reason="invalid_message"\} 1$/m);
    expect(metrics).toMatch(/^wh_serve_events_accepted_total 14$/m);
    expect(wh.stderr()).not.toMatch(STACK_TRACE);
  });

  it("answers 200 saying how many events it rejected and why, for a batch or a single call", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const auth = { authorization: basic("wk"), "content-type": "application/json" };
    const batch = [
      { type: "track", userId: "u", event: "ok" },
      7,
      { type: "track", userId: "u", event: "big", properties: { pad: "x".repeat(33_000) } },
      { type: "track", userId: "u", event: "late", timestamp: "yesterday" },
    ];
    const answer = await post(wh.url, "/v1/batch", JSON.stringify({ batch }), auth);
    expect(answer).toMatchObject({
      status: 200,
      json: {
        success: true,
        rejected: 3,
        errors: [
          { where: "batch[1]", reason: "not_an_object", message: "an event must be a JSON object" },
          { where: "batch[2]", reason: "too_large", message: expect.stringContaining("32 KB") },
          { where: "batch[3]", reason: "invalid_timestamp", message: expect.stringContaining("ISO 8601") },
        ],
      },
    });
    const single = await post(wh.url, "/v1/track", JSON.stringify({ userId: "u" }), auth);
    expect(single).toMatchObject({ status: 200, json: { success: true, rejected: 1, errors: [{ where: "/v1/track", reason: "invalid_message" }] } });
    await eventually(() => hook.requests.length === 1, "one delivery");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(["ok"]);
  });

  it("shows a rejected event in the inspector beside the accepted ones, with its rule", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--ui"]);
    await wh.waitForStdout((text) => text.includes('"inspector"'));
    const inspector = lines(wh.stdout())
      .map((line) => JSON.parse(line) as { inspector?: string })
      .find((record) => record.inspector !== undefined)?.inspector as string;
    const batch = [
      { type: "track", userId: "u", event: "Kept" },
      { type: "track", userId: "u", event: "" },
    ];
    expect((await post(wh.url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") })).status).toBe(200);
    const events = new URL(inspector);
    events.pathname = "/events";
    const controller = new AbortController();
    const stream = await fetch(events, { signal: controller.signal });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes('"verdict":"rejected"')) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    const entries = text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>)
      .filter((entry) => entry.verdict !== undefined);
    expect(entries.map((entry) => [entry.verdict, entry.reason])).toEqual([
      ["accepted", undefined],
      ["rejected", "batch[1]: You must pass 'event'."],
    ]);
  });
});
