// wh serve with destination filters, on the spool and on a real redis-server (skipped without one).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { redisAvailable, startRedis, type TestRedis } from "../../redis/redis-server.js";
import { inProcess } from "../../helpers/in-process.js";
import { makeTempDir } from "../../helpers/run-wh.js";
import { basic, eventually, post, sdk, SECRET, servedInTempDirs, signedBodies } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();
let redis: TestRedis | undefined;
let database = 0;
beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const FILTERS = [
  { title: "No heartbeats", if: "event = 'Heartbeat'", actions: [{ type: "DROP" }] },
  { title: "Totals only", if: "event = 'Order Completed'", actions: [{ type: "ALLOW_PROPERTIES", fields: { properties: ["total"] } }] },
];

async function dirWith(config: object): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), JSON.stringify(config));
  return dir;
}

const scrape = async (url: string): Promise<string> => (await fetch(`${url}/metrics`)).text();

/** The queue flags: none (the spool), or a fresh Redis database each time. */
function queueArgs(store: "spool" | "redis"): string[] {
  if (store === "spool") return [];
  database += 1;
  return ["--queue", `${redis?.url}/${database}`];
}

/** What the SDK's events became: the bodies delivered (in order of arrival), and every 200 it was given. */
async function sentWithSdk(hook: RecordingServer, url: string, expected: number): Promise<{ bodies: Record<string, unknown>[]; errors: unknown[] }> {
  const analytics = sdk(url);
  const errors: unknown[] = [];
  analytics.on("error", (error) => errors.push(error));
  analytics.track({ userId: "u1", event: "Heartbeat", messageId: "beat-1", properties: { at: 1 } });
  analytics.track({ userId: "u1", event: "Order Completed", messageId: "order-1", properties: { total: 99.5, email: "u1@example.com" } });
  analytics.track({ userId: "u1", event: "Heartbeat", messageId: "beat-2", properties: { at: 2 } });
  analytics.track({ userId: "u1", event: "Signed Up", messageId: "signup-1", properties: { plan: "pro" } });
  await analytics.closeAndFlush();
  await eventually(() => hook.requests.length >= expected, `${expected} deliveries`);
  return { bodies: signedBodies(hook.requests), errors };
}

describe.each(["spool", "redis"] as const)("wh serve with destination filters (%s)", (store) => {
  it.skipIf(store === "redis" && !redisAvailable)(
    "answers the SDK 200 for a dropped event, forwards neither it nor the cut properties, and counts it filtered in /metrics",
    async () => {
      const hook = await receiver();
      const wh = await serve(["--url", hook.url, ...queueArgs(store)], await dirWith({ filters: FILTERS }));

      const { bodies, errors } = await sentWithSdk(hook, wh.url, 2);

      expect(errors).toEqual([]);
      await expect.poll(() => scrape(wh.url)).toMatch(/^wh_serve_events_total\{outcome="skipped",skip="filtered"\} 2$/m);
      const metrics = await scrape(wh.url);
      expect(metrics).toMatch(/^wh_serve_events_total\{outcome="delivered"\} 2$/m);
      // Accepted (the SDK was answered 200 for them), then dropped by the filter.
      expect(metrics).toMatch(/^wh_serve_events_accepted_total 4$/m);
      expect(hook.requests.length).toBe(2);
      expect(bodies.map((body) => body.messageId)).toEqual(["order-1", "signup-1"]);
      expect(bodies[0]?.properties).toEqual({ total: 99.5 });
      expect(bodies[1]?.properties).toEqual({ plan: "pro" });
    },
  );

  it.skipIf(store === "redis" && !redisAvailable)("a source's own filters replace the top level's, for its write key only", async () => {
    const web = await receiver();
    const ios = await receiver();
    const config = {
      filters: [{ title: "No heartbeats", if: "event = 'Heartbeat'", actions: [{ type: "DROP" }] }],
      sources: {
        web: { writeKey: "wk-web", webhooks: [{ url: web.url }], filters: [{ title: "No web debug", if: "event = 'Debug'", actions: [{ type: "DROP" }] }] },
        ios: { writeKey: "wk-ios", webhooks: [{ url: ios.url }] },
      },
    };
    const wh = await serve(queueArgs(store), await dirWith(config));
    const events = (source: string) =>
      JSON.stringify({
        batch: ["Heartbeat", "Debug", "Opened"].map((event) => ({ type: "track", userId: "u1", event, messageId: `${source}-${event}` })),
      });

    const answers = [
      await post(wh.url, "/v1/batch", events("web"), { authorization: basic("wk-web") }),
      await post(wh.url, "/v1/batch", events("ios"), { authorization: basic("wk-ios") }),
    ];

    expect(answers.map((answer) => [answer.status, answer.json])).toEqual([
      [200, { success: true }],
      [200, { success: true }],
    ]);
    await eventually(() => web.requests.length === 2 && ios.requests.length === 2, "two deliveries each");
    await expect.poll(() => scrape(wh.url)).toMatch(/^wh_serve_events_total\{outcome="skipped",skip="filtered"\} 2$/m);
    expect(signedBodies(web.requests, SECRET).map((body) => body.event)).toEqual(["Heartbeat", "Opened"]);
    expect(signedBodies(ios.requests, SECRET).map((body) => body.event)).toEqual(["Debug", "Opened"]);
  });
});

describe.skipIf(!redisAvailable)("wh serve with destination filters, accepting and forwarding apart (Redis)", () => {
  it("the forwarding process filters what the accepting one queued, and counts it", async () => {
    const hook = await receiver();
    const [queue] = queueArgs("redis").slice(1);
    const dir = await dirWith({ filters: FILTERS });
    const accepting = await serve(["--url", hook.url, "--queue", queue as string, "--role", "accept"], dir);
    const forwarding = await serve(["--url", hook.url, "--queue", queue as string, "--role", "forward"], dir);

    const { bodies, errors } = await sentWithSdk(hook, accepting.url, 2);

    expect(errors).toEqual([]);
    await expect.poll(() => scrape(forwarding.url)).toMatch(/^wh_serve_events_total\{outcome="skipped",skip="filtered"\} 2$/m);
    expect(bodies.map((body) => [body.messageId, body.properties])).toEqual([
      ["order-1", { total: 99.5 }],
      ["signup-1", { plan: "pro" }],
    ]);
    expect(hook.requests.length).toBe(2);
  });
});

describe("wh serve's terminal with destination filters", () => {
  it("says which event a filter dropped, as it says which it delivered", async () => {
    const hook = await receiver();
    const wh = inProcess(["serve", "--port", "0", "--url", hook.url], { cwd: await dirWith({ filters: FILTERS }), env: { WH_SHARED_SECRET: SECRET } });
    try {
      const started = await wh.waitForStderr((text) => /tracking API on http:\S+/.test(text));
      const url = /tracking API on (http:\S+)/.exec(started)?.[1] as string;

      await sentWithSdk(hook, url, 2);

      const said = await wh.waitForStderr((text) => text.includes("signup-1) delivered") && text.includes("beat-2) skipped"));
      expect(said).toMatch(/→ track "Heartbeat" by \S+ \(messageId beat-1\) skipped: the filter "No heartbeats" dropped it/);
      expect(said).toMatch(/→ track "Heartbeat" by \S+ \(messageId beat-2\) skipped: the filter "No heartbeats" dropped it/);
      expect(said).toMatch(/→ track "Order Completed" by \S+ \(messageId order-1\) delivered to /);
    } finally {
      wh.child.kill("SIGTERM");
      await wh.exited;
    }
  });
});

describe("wh serve's terminal names each event as the inspector does", () => {
  it("by its type, event name and user, then its messageId, for a delivery, a skip and a failure; the client's text neutralised", async () => {
    // 400 is final: the identify fails at once.
    const hook = await receiver({ replies: (request) => (request.body.toString("utf8").includes('"type":"identify"') ? 400 : 200) });
    const wh = inProcess(["serve", "--port", "0", "--url", hook.url], { cwd: await dirWith({ filters: FILTERS }), env: { WH_SHARED_SECRET: SECRET } });
    try {
      const started = await wh.waitForStderr((text) => /tracking API on http:\S+/.test(text));
      const url = /tracking API on (http:\S+)/.exec(started)?.[1] as string;
      const batch = [
        { type: "track", event: "Order Completed", userId: "user-42", messageId: "order-1" },
        { type: "track", event: "Heartbeat", anonymousId: "anon-7", messageId: "beat-1" },
        { type: "identify", userId: "evil\u001b[2J\u202e", messageId: "id-1" },
      ];
      expect((await post(url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk"), "content-type": "application/json" })).status).toBe(200);
      const said = await wh.waitForStderr((text) => ["order-1) delivered", "beat-1) skipped", "id-1): failed"].every((part) => text.includes(part)));
      expect(said).toMatch(/→ track "Order Completed" by user-42 \(messageId order-1\) delivered to http:\S+ \(1 attempt, \d+ ms\)/);
      expect(said).toContain('→ track "Heartbeat" by anon-7 (messageId beat-1) skipped: the filter "No heartbeats" dropped it');
      expect(said).toContain(`identify by evil\\x1b[2J\\u202e (messageId id-1): failed: ${hook.url} → HTTP 400`);
      expect(said).not.toContain("\u001b[2J");
    } finally {
      wh.child.kill("SIGTERM");
      await wh.exited;
    }
  });
});
