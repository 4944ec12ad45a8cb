import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newClient, QueueKeys, type RedisClient } from "../../../src/adapters/redis/connection.js";
import { RedisQueue } from "../../../src/adapters/redis/queue.js";
import { redisAvailable, startRedis, type TestRedis } from "../../redis/redis-server.js";

// Dead letters of wh serve's Redis queue keep the partition their event came from, and a replay
// puts each back into that partition's stream (the one its user's other events are in, so the
// user's order and the partition's single owner hold), never into another.

let redis: TestRedis;
let client: RedisClient;
beforeAll(async () => {
  if (!redisAvailable) return;
  redis = await startRedis();
  client = newClient(redis.url);
  await client.connect();
});
afterAll(async () => {
  await client?.destroy();
  await redis?.stop();
});

const entry = (partition: number, user: string) => ({
  partition,
  id: "1-0",
  text: JSON.stringify({ source: null, event: { type: "track", userId: user, messageId: `m-${user}` } }),
  lease: new AbortController().signal,
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** The record texts in each partition's stream that has any. */
async function streams(keys: QueueKeys, partitions: number): Promise<Record<number, string[]>> {
  const found: Record<number, string[]> = {};
  for (let partition = 0; partition < partitions; partition += 1) {
    const entries = (await client.xRange(keys.stream(partition), "-", "+")) ?? [];
    if (entries.length > 0) found[partition] = entries.map(({ message }) => String(message.r));
  }
  return found;
}

describe.skipIf(!redisAvailable)("Redis dead letters (a real redis-server)", () => {
  it("keep their events' partitions, and a replay puts each back into its own partition's stream, a chosen one alone first", async () => {
    const prefix = `wh:edges:${randomBytes(4).toString("hex")}`;
    const keys = new QueueKeys(prefix);
    const queue = await RedisQueue.connect(redis.url, { partitions: 8, prefix });
    try {
      const five = entry(5, "u5");
      const three = entry(3, "u3");
      queue.deadLetter(JSON.stringify({ outcome: "failed" }), five);
      queue.deadLetter(JSON.stringify({ outcome: "failed" }), three);
      await queue.commit();
      const letters = await collect(queue.listDeadLetters());
      // Each partition has its dead-letter stream; two written in one millisecond are listed in partition order.
      expect(letters.map(({ partition, entry }) => ({ partition, entry }))).toEqual([
        { partition: 3, entry: three.text },
        { partition: 5, entry: five.text },
      ]);

      expect(await queue.replayDeadLetters([letters[0]?.id as string])).toBe(1);
      expect(await streams(keys, 8)).toEqual({ 3: [three.text] });
      expect(await queue.replayDeadLetters()).toBe(1);
      expect(await streams(keys, 8)).toEqual({ 3: [three.text], 5: [five.text] });
      expect(await collect(queue.listDeadLetters())).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});
