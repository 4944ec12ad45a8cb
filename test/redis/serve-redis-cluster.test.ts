// wh serve on a real Redis Cluster (3 masters, 3 replicas, started here), in-process.
import { Analytics } from "@segment/analytics-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { QueueKeys } from "../../src/adapters/redis-connection.js";
import { inProcess } from "../helpers/in-process.js";
import { closedAfterEach, type RecordedRequest } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "../cli/run-wh.js";
import { eventually, signedBodies, startServe, type ServeProcess } from "../cli/serve-helpers.js";
import { cli, clusterAvailable, startCluster, type TestCluster } from "./redis-cluster.js";

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
let cluster: TestCluster | undefined;

beforeAll(async () => {
  if (clusterAvailable) cluster = await startCluster();
}, 90_000);
afterEach(async () => {
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});
afterAll(async () => {
  await cluster?.stop();
  await removeTempDirs();
});

/** wh serve in a fresh directory, in-process. */
async function serve(args: readonly string[]): Promise<ServeProcess> {
  const process = await startServe(args, { cwd: await makeTempDir() }, inProcess);
  running.push(process);
  return process;
}

/**
 * The URL of one of the six nodes. A cluster has database 0 only: the tests share one queue (16
 * partitions), each with users and events of its own.
 */
function nodeUrl(index: number): string {
  return (cluster as TestCluster).nodes[index]?.url as string;
}

/** First arrivals by messageId, the duplicates, and each user's indexes in arrival order. */
function arrivals(requests: RecordedRequest[]): { ids: Set<string>; duplicates: number; byUser: Map<string, number[]> } {
  const ids = new Set<string>();
  const byUser = new Map<string, number[]>();
  let duplicates = 0;
  for (const body of signedBodies(requests)) {
    const id = body.messageId as string;
    if (ids.has(id)) {
      duplicates += 1;
      continue;
    }
    ids.add(id);
    const index = (body.properties as { index: number }).index;
    byUser.set(body.userId as string, [...(byUser.get(body.userId as string) ?? []), index]);
  }
  return { ids, duplicates, byUser };
}

describe.skipIf(!clusterAvailable)("wh serve --queue on a Redis Cluster (3 masters, 3 replicas)", () => {
  it("any node of the cluster will do: a real analytics-node client's events of 300 users, each acknowledged one delivered once, each user's in order, the partitions spread over the three masters", async () => {
    const hook = await receiver();
    const args = (node: number) => ["--queue", nodeUrl(node), "--partitions", "16", "--url", hook.url, "--concurrency", "4"];
    // One process names a master, another a replica: both find the slots' masters.
    const [a, b] = [await serve(args(0)), await serve(args(4))];
    const analytics = new Analytics({ writeKey: "wk", host: a.url, flushAt: 50, flushInterval: 20, maxRetries: 0 });
    const acknowledged = new Set<string>();
    const perUser = new Map<string, number>();
    for (let index = 0; index < 3_000; index += 1) {
      const userId = `c-user-${index % 300}`;
      const order = perUser.get(userId) ?? 0;
      perUser.set(userId, order + 1);
      const messageId = `c-${index}`;
      analytics.track({ userId, event: "Clustered", messageId, properties: { index: order } }, (error) => {
        if (error === undefined) acknowledged.add(messageId);
      });
      if (index % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await analytics.closeAndFlush({ timeout: 30_000 });
    expect(acknowledged.size).toBe(3_000);
    // One request per event (classic mode): counted cheaply while waiting, checked once after.
    await eventually(() => hook.requests.length >= acknowledged.size, 60_000, "as many deliveries as acknowledged events");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { ids, duplicates, byUser } = arrivals(hook.requests);
    expect([...acknowledged].filter((id) => !ids.has(id))).toEqual([]);
    expect(duplicates).toBe(0);
    for (const [user, indexes] of byUser) expect(indexes, user).toEqual(indexes.map((_, index) => index));

    // Each partition's keys share one slot, and the partitions' slots are on all three masters.
    const keys = new QueueKeys("wh:serve");
    const holders = new Set<number>();
    for (let partition = 0; partition < 16; partition += 1) {
      const names = [keys.stream(partition), keys.lease(partition), keys.taken(partition), keys.deadLetters(partition)];
      const slots = new Set(
        await Promise.all(names.map(async (name) => (await cli((cluster as TestCluster).nodes[0]?.port as number, "cluster", "keyslot", name)).trim())),
      );
      expect(slots.size, `partition ${partition}'s keys`).toBe(1);
      const master = await (cluster as TestCluster).masterOf(keys.stream(partition));
      expect((await cli(master, "exists", keys.stream(partition))).trim(), `partition ${partition}'s stream on its master`).toBe("1");
      holders.add(master);
    }
    expect(holders.size).toBe(3);
    expect([...holders].sort()).toEqual((await (cluster as TestCluster).masters()).sort());
    const owned = await Promise.all(
      [a, b].map(async (process) => ((await (await fetch(`${process.url}/health`)).json()) as { queue: { owned: number[] } }).queue.owned),
    );
    expect(owned.flat().sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, partition) => partition));
  }, 120_000);
});
