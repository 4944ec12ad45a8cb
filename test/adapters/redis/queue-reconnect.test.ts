import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisQueue } from "../../../src/adapters/redis/queue.js";
import type { QueuedEntry } from "../../../src/adapters/redis/reader.js";
import { redisAvailable, startRedis, type TestRedis } from "../../redis/redis-server.js";

// wh serve's forwarding reads on a connection of its own, opened once the queue is open. Only the
// first connection of a start may fail for good (wrong URL, no Redis: an answer, at once): Redis
// away just as forwarding starts (a restart, a failover) must be waited out like any later outage,
// or the forwarder never reads again ("The client is closed", every second, for ever).

let redis: TestRedis;
beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(!redisAvailable)("RedisQueue's forwarding (a real redis-server)", () => {
  it("reads once Redis is back when it was away as forwarding started, and delivers what is appended then", async () => {
    const queue = await RedisQueue.connect(redis.url, { partitions: 2, prefix: `wh:reconnect:${randomBytes(4).toString("hex")}` });
    const delivered: QueuedEntry[] = [];
    const errors: string[] = [];
    try {
      // Down for 1.5 s, longer than a first connection is retried: the reader's connection is opened while it is.
      const restarting = redis.restart(1_500);
      await new Promise((resolve) => setTimeout(resolve, 200));
      queue.startForwarding({ deliver: (entries) => delivered.push(...entries), outstanding: () => 0, onError: (error) => errors.push(error.message) });
      await restarting;
      const text = JSON.stringify({ source: null, event: { type: "track", userId: "u1", messageId: "m-after-restart" } });
      await expect
        .poll(
          () =>
            queue.append([{ partition: 0, text }]).then(
              () => true,
              () => false,
            ),
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
      await expect
        .poll(() => delivered.map((entry) => entry.text), { timeout: 20_000, interval: 200, message: `forwarding's errors: ${errors.slice(-3).join("; ")}` })
        .toContain(text);
    } finally {
      await queue.close();
    }
  }, 40_000);
});
