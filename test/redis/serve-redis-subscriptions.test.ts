import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { lines, makeTempDir, STACK_TRACE } from "../helpers/run-wh.js";
import { runInProcess } from "../helpers/in-process.js";
import { basic, eventually, post, servedInTempDirs } from "../cli/commands/serve-helpers.js";
import {
  expectRoutedDeliveries,
  expectSkippedGroups,
  replies,
  sendEvents,
  subscriptionsDir,
  trackSubscription,
} from "../cli/commands/serve-subscriptions-scenario.js";
import { closedAfterEach } from "../helpers/recording-server.js";
import { redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();
let redis: TestRedis;

beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(!redisAvailable)("wh serve --queue redis:// with subscriptions (a real redis-server)", () => {
  it("a real analytics-node client's 300 events: each once to each subscription its trigger matches, mapped, signed, each user's in order; the unmatched skipped", async () => {
    const hook = await receiver({ replies });
    const wh = await serve(["--queue", `${redis.url}/1`, "--partitions", "8"], await subscriptionsDir(hook));
    await sendEvents(wh.url);
    await expectRoutedDeliveries(hook);
    await expectSkippedGroups(wh.url);
    expect(wh.stderr()).not.toMatch(STACK_TRACE);
  });

  it("a dead letter names the subscription the event did not reach; replayed, it goes there alone", async () => {
    const url = `${redis.url}/2`;
    let healed = false;
    const hook = await receiver({ replies: (request) => (request.path === "/hook/bad" && !healed ? 400 : 200) });
    const dir = await makeTempDir();
    const subscription = (name: string, path: string) => trackSubscription(name, `${hook.url}${path}`);
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ subscriptions: [subscription("Good", "/ok"), subscription("Bad", "/bad")] }));
    const wh = await serve(["--queue", url, "--partitions", "2"], dir);
    expect((await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Signed Up" }), { authorization: basic("wk") })).status).toBe(200);
    const listed = async (): Promise<string[]> => lines((await runInProcess(["--json", "serve", "dead-letters", "list", "--queue", url])).stdout);
    await expect.poll(listed, { timeout: 10_000 }).toHaveLength(1);
    const [letter] = (await listed()).map((line) => JSON.parse(line) as { reason: string; record?: { subscriptions?: string[] } } & Record<string, unknown>);
    expect(JSON.stringify(letter)).toContain('"subscriptions":["Bad"]');
    expect(letter?.reason).toMatch(/^subscription "Bad": .*HTTP 400/);
    healed = true;
    expect((await runInProcess(["serve", "dead-letters", "replay", "--queue", url])).code).toBe(0);
    await eventually(() => hook.requests.length === 3, "the replayed delivery");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.requests.map((request) => request.path).slice(2)).toEqual(["/hook/bad"]);
    expect(hook.requests).toHaveLength(3);
  });
});
