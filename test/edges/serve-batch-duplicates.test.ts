import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { basic, eventually, post, servedInTempDirs, signedBodies } from "../cli/commands/serve-helpers.js";

// wh serve's dedup by messageId inside one request: two events of one batch with the same
// messageId are one event (the first), while an invalid event does not take its messageId from
// a valid one after it; and the messageIds of a request the spool refused (503) are not taken as
// seen, so the client's retry is accepted, not dropped as a duplicate.

const receiver = closedAfterEach();
const serve = servedInTempDirs();
const auth = { authorization: basic("wk"), "content-type": "application/json" };

const track = (messageId: string, event: string, extra: Record<string, unknown> = {}) => ({ type: "track", userId: "u1", event, messageId, ...extra });

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
}

describe("wh serve's dedup inside one batch", () => {
  it("accepts the first of two events with one messageId, delivers it once, and counts the other a duplicate", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const batch = [track("m-1", "First"), track("m-1", "Second"), track("m-2", "Other")];
    expect((await post(wh.url, "/v1/batch", JSON.stringify({ batch }), auth)).status).toBe(200);
    await eventually(() => hook.requests.length >= 2, "two deliveries");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(signedBodies(hook.requests).map((body) => [body.messageId, body.event])).toEqual([
      ["m-1", "First"],
      ["m-2", "Other"],
    ]);
    expect(await metric(wh.url, "wh_serve_events_duplicate_total")).toBe(1);
    expect(await metric(wh.url, "wh_serve_events_accepted_total")).toBe(2);
  });

  it("accepts a valid event whose messageId an invalid one before it in the batch had", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    // A track without an event name is refused by the pipeline, alone.
    const batch = [{ type: "track", userId: "u1", messageId: "m-1" }, track("m-1", "Valid")];
    const answer = await post(wh.url, "/v1/batch", JSON.stringify({ batch }), auth);
    expect(answer).toMatchObject({ status: 200, json: { success: true, rejected: 1 } });
    await eventually(() => hook.requests.length === 1, "the valid event's delivery");
    expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(["Valid"]);
    expect(await metric(wh.url, "wh_serve_events_duplicate_total")).toBe(0);
  });

  it("takes a retry of a request the spool refused: its messageIds were not seen", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--max-spool", "2kb"]);
    const pad = "x".repeat(1_200);
    const refused = await post(
      wh.url,
      "/v1/batch",
      JSON.stringify({ batch: [track("m-a", "A", { properties: { pad } }), track("m-b", "B", { properties: { pad } })] }),
      auth,
    );
    expect(refused.status).toBe(503);
    const retried = await post(wh.url, "/v1/batch", JSON.stringify({ batch: [track("m-a", "A", { properties: { pad } })] }), auth);
    expect(retried.status).toBe(200);
    await eventually(() => hook.requests.length === 1, "the retried event's delivery");
    expect(signedBodies(hook.requests).map((body) => body.messageId)).toEqual(["m-a"]);
    expect(await metric(wh.url, "wh_serve_events_duplicate_total")).toBe(0);
  });
});
