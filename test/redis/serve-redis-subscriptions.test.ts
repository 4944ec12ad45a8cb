import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STACK_TRACE } from "../cli/run-wh.js";
import { servedInTempDirs } from "../cli/serve-helpers.js";
import { expectRoutedDeliveries, expectSkippedGroups, replies, sendEvents, subscriptionsDir } from "../cli/serve-subscriptions-scenario.js";
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
});
