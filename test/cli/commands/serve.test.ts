import { gzipSync } from "node:zlib";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { lines, makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";
import { basic, eventually, post, sdk, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((serve) => serve.stop()));
  await removeTempDirs();
});

async function serve(args: readonly string[], cwd?: string, env?: Record<string, string | undefined>): Promise<ServeProcess> {
  const process = await startServe(args, { cwd: cwd ?? (await makeTempDir()), env });
  running.push(process);
  return process;
}

/** One call of every type, as an app would make them with the SDK. */
function sendEveryCall(analytics: ReturnType<typeof sdk>): void {
  analytics.identify({ userId: "u1", traits: { plan: "pro", email: "u1@example.com" } });
  analytics.track({ userId: "u1", event: "Order Completed", properties: { total: 99.5 } });
  analytics.page({ userId: "u1", name: "Home", properties: { path: "/", title: "Home" } });
  analytics.screen({ userId: "u1", name: "Dashboard" });
  analytics.group({ userId: "u1", groupId: "g1", traits: { name: "Acme" } });
  analytics.alias({ userId: "u1", previousId: "anon-1" });
}

/** Every call type sent with the SDK to `wh serve --url <receiver> …args`: the bodies delivered, signed, in order. */
async function everyCallDelivered(args: readonly string[]): Promise<Record<string, unknown>[]> {
  const hook = await receiver();
  const wh = await serve(["--url", hook.url, ...args]);
  const analytics = sdk(wh.url);
  sendEveryCall(analytics);
  await analytics.closeAndFlush();
  await eventually(() => hook.requests.length === 6, "six deliveries");
  const bodies = signedBodies(hook.requests);
  expect(bodies.map((body) => body.type)).toEqual(["identify", "track", "page", "screen", "group", "alias"]);
  expect(wh.stderr()).not.toMatch(STACK_TRACE);
  return bodies;
}

describe("wh serve with @segment/analytics-node as the client", () => {
  it("delivers every call type, signed, in the classic shapes, each user's events in order", async () => {
    const bodies = await everyCallDelivered([]);
    for (const body of bodies) {
      expect(body.version).toBe(1);
      expect(typeof body.messageId).toBe("string");
      expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(bodies[1]).toMatchObject({ event: "Order Completed", userId: "u1", properties: { total: 99.5 } });
    expect(bodies[2]).toMatchObject({ name: "Home", properties: { path: "/", title: "Home" } });
    expect(bodies[4]).toMatchObject({ groupId: "g1", traits: { name: "Acme" } });
    // The seed's alias shape: the literal keys.
    expect(bodies[5]).toMatchObject({ "Previous ID": "anon-1", "User ID": "u1" });
  });

  it("in actions mode delivers whole events with what Segment's pipeline adds", async () => {
    const bodies = await everyCallDelivered(["--mode", "actions"]);
    for (const body of bodies) {
      // A server-side library's event: Segment does not take the app server's address for the user's.
      expect(body).toMatchObject({ userId: "u1", context: { library: { name: "@segment/analytics-node" } } });
      expect((body.context as Record<string, unknown>).ip).toBeUndefined();
      expect(typeof body.receivedAt).toBe("string");
      expect(typeof body.originalTimestamp).toBe("string");
      expect(typeof body.sentAt).toBe("string");
      expect(body.writeKey).toBeUndefined();
    }
    expect(bodies[5]).toMatchObject({ previousId: "anon-1" });
  });

  it("routes by write key to each source's webhooks and secret; an unknown key is answered 401 and the SDK is told", async () => {
    const web = await receiver();
    const ios = await receiver();
    const dir = await makeTempDir();
    await writeFile(
      join(dir, ".whrc.json"),
      JSON.stringify({
        sources: {
          web: { writeKey: "wk-web", webhooks: [{ url: web.url }], sharedSecret: "web-secret" },
          ios: { writeKey: "wk-ios", webhooks: [{ url: ios.url }], sharedSecret: "ios-secret", mode: "actions" },
        },
      }),
    );
    // Each source's own secret: no WH_SHARED_SECRET over them.
    const wh = await serve([], dir, { WH_SHARED_SECRET: undefined });
    const fromWeb = sdk(wh.url, "wk-web");
    const fromIos = sdk(wh.url, "wk-ios");
    fromWeb.track({ userId: "w1", event: "Web Event" });
    fromIos.track({ userId: "i1", event: "iOS Event" });
    await Promise.all([fromWeb.closeAndFlush(), fromIos.closeAndFlush()]);
    await eventually(() => web.requests.length === 1 && ios.requests.length === 1, "one delivery each");
    expect(signedBodies(web.requests, "web-secret")[0]).toMatchObject({ version: 1, event: "Web Event" });
    expect(signedBodies(ios.requests, "ios-secret")[0]).toMatchObject({ event: "iOS Event", receivedAt: expect.any(String) });

    const errors: unknown[] = [];
    const stranger = sdk(wh.url, "wk-unknown");
    stranger.on("error", (error) => errors.push(error));
    stranger.track({ userId: "x", event: "Nobody" });
    await stranger.closeAndFlush();
    expect(errors.length).toBe(1);
    // The body's writeKey works as well as basic auth; none at all is 401 too.
    expect((await post(wh.url, "/v1/track", JSON.stringify({ writeKey: "wk-web", userId: "w2", event: "Body Key" }))).status).toBe(200);
    const none = await post(wh.url, "/v1/track", JSON.stringify({ userId: "w3", event: "No Key" }));
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ success: false, code: "no_write_key", message: expect.stringContaining("no write key") });
    const unknown = await post(wh.url, "/v1/track", JSON.stringify({ userId: "w3", event: "E" }), { authorization: basic("nope") });
    expect(unknown).toMatchObject({ status: 401, json: { success: false, message: "unknown write key" } });
    await eventually(() => web.requests.length === 2, "the body-key event");
    expect(ios.requests.length).toBe(1);
  });
});

describe("wh serve: the tracking API by hand", () => {
  it("takes the short paths analytics.js posts with text/plain, and answers CORS preflights", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const preflight = await fetch(`${wh.url}/v1/t`, { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("Content-Type, Authorization, Content-Encoding, X-Retry-Count");
    const asking = await fetch(`${wh.url}/v1/t`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,x-retry-count,x-app-trace",
      },
    });
    expect(asking.headers.get("access-control-allow-headers")).toBe("authorization,x-retry-count,x-app-trace");
    const paths = {
      "/v1/i": { userId: "u1", traits: {} },
      "/v1/t": { userId: "u1", event: "E" },
      "/v1/p": { userId: "u1", name: "P" },
      "/v1/s": { userId: "u1", name: "S" },
      "/v1/g": { userId: "u1", groupId: "g" },
      "/v1/a": { userId: "u1", previousId: "p" },
    };
    for (const [path, body] of Object.entries(paths)) {
      const answer = await post(wh.url, path, JSON.stringify({ ...body, writeKey: "wk" }), { "content-type": "text/plain" });
      expect(answer, path).toMatchObject({ status: 200, json: { success: true } });
      expect(answer.headers.get("access-control-allow-origin")).toBe("*");
    }
    const batch = await post(wh.url, "/v1/b", JSON.stringify({ writeKey: "wk", batch: [{ type: "track", userId: "u2", event: "In Batch" }] }), {
      "content-type": "text/plain",
    });
    expect(batch.status).toBe(200);
    await eventually(() => hook.requests.length === 7, "seven deliveries");
    // u1's events in order; u2's batch is another user's, free to arrive in between.
    const bodies = signedBodies(hook.requests);
    expect(bodies.filter((body) => body.userId === "u1" || body["User ID"] === "u1").map((body) => body.type)).toEqual([
      "identify",
      "track",
      "page",
      "screen",
      "group",
      "alias",
    ]);
    expect(bodies.filter((body) => body.userId === "u2").map((body) => body.event)).toEqual(["In Batch"]);
  });

  it("undoes gzip, merges the batch's context into each event, and corrects timestamps by sentAt", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--mode", "actions"]);
    const clientNow = Date.now() + 3_600_000; // the client's clock is an hour fast
    const happened = new Date(clientNow - 10_000).toISOString();
    const body = {
      sentAt: new Date(clientNow).toISOString(),
      context: { library: { name: "analytics.js" }, locale: "fr-FR" },
      batch: [
        { type: "track", userId: "u1", event: "A", timestamp: happened, context: { locale: "de-DE" } },
        { type: "track", userId: "u1", event: "B" },
      ],
    };
    const before = Date.now();
    const answer = await post(wh.url, "/v1/batch", gzipSync(JSON.stringify(body)), {
      "content-type": "application/json",
      "content-encoding": "gzip",
      authorization: basic("wk"),
    });
    expect(answer.status).toBe(200);
    await eventually(() => hook.requests.length === 2, "two deliveries");
    const [first, second] = signedBodies(hook.requests) as [Record<string, unknown>, Record<string, unknown>];
    expect(first.context).toMatchObject({ library: { name: "analytics.js" }, locale: "de-DE", ip: "127.0.0.1" });
    expect(second.context).toMatchObject({ library: { name: "analytics.js" }, locale: "fr-FR", ip: "127.0.0.1" });
    expect(first.originalTimestamp).toBe(happened);
    // timestamp = receivedAt - (sentAt - originalTimestamp): ten seconds before it arrived.
    const corrected = Date.parse(String(first.timestamp));
    expect(corrected - Date.parse(String(first.receivedAt))).toBe(-10_000);
    expect(corrected).toBeGreaterThanOrEqual(before - 10_000 - 5);
    // No timestamp: it happened when it arrived.
    expect(second.timestamp).toBe(second.receivedAt);
  });

  it("drops a retried request's events by messageId, and still answers 200", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const body = JSON.stringify({
      batch: [
        { type: "track", userId: "u1", event: "Once", messageId: "m-1" },
        { type: "track", userId: "u1", event: "Once too", messageId: "m-2" },
      ],
    });
    expect((await post(wh.url, "/v1/batch", body, { authorization: basic("wk") })).status).toBe(200);
    expect((await post(wh.url, "/v1/batch", body, { authorization: basic("wk") })).status).toBe(200);
    await eventually(() => hook.requests.length === 2, "two deliveries");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.requests.length).toBe(2);
    const metrics = await (await fetch(`${wh.url}/metrics`)).text();
    expect(metrics).toMatch(/^wh_serve_events_duplicate_total 2$/m);
    expect(metrics).toMatch(/^wh_serve_events_accepted_total 2$/m);
    expect(wh.stdout()).toContain('"duplicates":2');
  });

  it("refuses bad requests with 400 (malformed, oversize body, a single call over 32 KiB), 404 and 405, and drops an invalid event alone, sending nothing", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--max-body", "40kb"]);
    const auth = { authorization: basic("wk"), "content-type": "application/json" };
    const malformed = await post(wh.url, "/v1/track", "{not json", auth);
    expect(malformed).toMatchObject({ status: 400, json: { success: false, message: expect.stringContaining("not JSON") } });
    const huge = await post(
      wh.url,
      "/v1/batch",
      JSON.stringify({ batch: [{ type: "track", userId: "u", event: "E", properties: { pad: "x".repeat(45_000) } }] }),
      auth,
    );
    expect(huge).toMatchObject({ status: 400, json: { message: expect.stringContaining("larger than 40000 bytes") } });
    const hugeZipped = await post(
      wh.url,
      "/v1/batch",
      gzipSync(JSON.stringify({ batch: [{ type: "track", userId: "u", event: "E", properties: { pad: "x".repeat(45_000) } }] })),
      { ...auth, "content-encoding": "gzip" },
    );
    expect(hugeZipped.status).toBe(400);
    const bigEvent = await post(wh.url, "/v1/track", JSON.stringify({ userId: "u", event: "E", properties: { pad: "x".repeat(33_000) } }), auth);
    // A single call over 32 KiB is refused whole, as Segment's API does (segment-docs HTTP API, "Max request size").
    expect(bigEvent).toMatchObject({ status: 400, json: { code: "body_too_large", message: expect.stringContaining("32 KB") } });
    const invalid = await post(wh.url, "/v1/batch", JSON.stringify({ batch: [{ type: "track", userId: "u" }] }), auth);
    expect(invalid).toMatchObject({ status: 200, json: { rejected: 1, errors: [{ where: "batch[0]", message: expect.stringContaining("event") }] } });
    expect((await post(wh.url, "/v2/track", "{}", auth)).status).toBe(404);
    expect((await fetch(`${wh.url}/v1/track`)).status).toBe(405);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.requests).toEqual([]);
    expect(wh.stderr()).not.toMatch(STACK_TRACE);
  });

  it("answers 503 with Retry-After once the spool is full, never 200 for what it did not keep", async () => {
    const dead = await receiver({ replies: [503] });
    const wh = await serve(["--url", dead.url, "--max-spool", "2kb", "--retry-window", "1h"]);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let index = 0; index < 20; index += 1) {
      const answer = await post(wh.url, "/v1/track", JSON.stringify({ userId: `u${index}`, event: "Fill", properties: { pad: "x".repeat(200) } }), {
        authorization: basic("wk"),
      });
      statuses.push(answer.status);
      if (answer.status === 503) retryAfter = answer.headers.get("retry-after");
    }
    expect(statuses).toContain(200);
    expect(statuses).toContain(503);
    expect(retryAfter).toBe("5");
    // Everything answered 200 is in the spool.
    const health = (await (await fetch(`${wh.url}/health`)).json()) as { spool: { depth: number } };
    expect(health.spool.depth).toBe(statuses.filter((status) => status === 200).length);
  });

  it("applies the integrations rules: an event turned off for Webhooks is skipped, not delivered", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const batch = [
      { type: "track", userId: "u1", event: "Off", integrations: { All: false } },
      { type: "track", userId: "u1", event: "On", integrations: { All: false, Webhooks: true } },
    ];
    expect((await post(wh.url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") })).status).toBe(200);
    await eventually(() => hook.requests.length === 1, "one delivery");
    await eventually(() => wh.stdout().includes('"outcome":"skipped"'), "the skipped record");
    expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(["On"]);
  });

  it("serves /health and Prometheus /metrics", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "E" }), { authorization: basic("wk") });
    await eventually(() => hook.requests.length === 1);
    // The delivery is counted once wh has the receiver's answer: wait for that, then read both.
    const scrape = async (): Promise<string> => (await fetch(`${wh.url}/metrics`)).text();
    await expect.poll(scrape).toMatch(/^wh_serve_events_total\{outcome="delivered"\} 1$/m);
    const health = await fetch(`${wh.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok", spool: { depth: 0 } });
    const metrics = await fetch(`${wh.url}/metrics`);
    expect(metrics.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await metrics.text();
    for (const family of [
      "wh_serve_requests_total",
      "wh_serve_events_accepted_total",
      "wh_serve_events_total",
      "wh_serve_retrying",
      "wh_serve_spool_depth",
      "wh_serve_delivery_latency_seconds",
    ]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    expect(text).toMatch(/^wh_serve_delivery_latency_seconds_count 1$/m);
    expect(text).toMatch(/^wh_serve_requests_total\{status="200"\} 1$/m);
  });

  it("with no webhooks configured, delivers to an embedded receiver and shows each event verified", async () => {
    const wh = await serve([]);
    const analytics = sdk(wh.url, "wh-local");
    analytics.track({ userId: "u1", event: "Embedded" });
    await analytics.closeAndFlush();
    await eventually(() => wh.stdout().includes("Embedded"), "the embedded receiver's line");
    const records = lines(wh.stdout()).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({ listening: wh.url, embeddedReceiver: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/) });
    expect(records.find((record) => record.signature !== undefined)).toMatchObject({ signature: "valid", status: 200 });
    expect(wh.stderr()).toContain("point a Segment SDK at it");
  });

  it("stops on SIGTERM, keeping undelivered events in the spool, and delivers them at the next start", async () => {
    const dir = await makeTempDir();
    const down = await receiver({ replies: [503] });
    const first = await serve(["--url", down.url], dir);
    for (let index = 0; index < 3; index += 1)
      expect((await post(first.url, "/v1/track", JSON.stringify({ userId: "u1", event: `E${index}` }), { authorization: basic("wk") })).status).toBe(200);
    await first.stop();
    expect((await first.exited).code).toBe(0);
    expect(await readdir(join(dir, ".wh", "serve", "spool"))).not.toEqual([]);
    const up = await receiver();
    const second = await serve(["--url", up.url], dir);
    await eventually(() => up.requests.length === 3, "the spooled events");
    expect(signedBodies(up.requests).map((body) => body.event)).toEqual(["E0", "E1", "E2"]);
    expect(lines(second.stdout())[0]).toContain('"recovered":3');
  });

  it("refuses a second wh serve on the same data directory, naming the first", async () => {
    const dir = await makeTempDir();
    const hook = await receiver();
    await serve(["--url", hook.url], dir);
    const second = await startServe(["--url", hook.url], { cwd: dir }).catch((error: Error) => error);
    expect(second).toBeInstanceOf(Error);
    expect(String(second)).toMatch(/spool.*(in use|held|locked)|another/i);
  });
});
