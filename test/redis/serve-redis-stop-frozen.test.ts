// Stopping wh serve while a master of its Redis Cluster is frozen (SIGSTOP): on a cluster of its
// own whose node timeout (60 s) outlasts the freeze, so that no replica takes over.
import { afterAll, describe, expect, it } from "vitest";
import { QueueKeys } from "../../src/adapters/redis/connection.js";
import { inProcess } from "../helpers/in-process.js";
import { closedAfterEach } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "../helpers/run-wh.js";
import { basic, eventually, post, startServe } from "../cli/commands/serve-helpers.js";
import { tally } from "./queue-traffic.js";
import { clusterAvailable, startCluster } from "./redis-cluster.js";

const receiver = closedAfterEach();
afterAll(removeTempDirs);

const batch = (index: number) =>
  JSON.stringify({
    batch: Array.from({ length: 16 }, (_, user) => ({ type: "track", userId: `stop-user-${user}`, event: "Stop", messageId: `stop-${index}-${user}` })),
  });

describe.skipIf(!clusterAvailable)("wh serve --queue on a Redis Cluster, stopped while a master is frozen", () => {
  it("stops within its wait on Redis (5 s) and says why, where it waited for as long as the master stayed frozen; once the master wakes, the next forwarder delivers every event", async () => {
    const own = await startCluster(60_000);
    try {
      const hook = await receiver();
      const args = ["--queue", own.nodes[0]?.url as string, "--partitions", "16", "--url", hook.url];
      const first = await startServe(args, { cwd: await makeTempDir() }, inProcess);
      const seen = tally(hook.requests);
      expect((await post(first.url, "/v1/batch", batch(0), { authorization: basic("wk") })).status).toBe(200);
      await eventually(() => seen().ids.size === 16, "the first batch, delivered");
      // The master of the forwarders' heartbeat: giving the leases back waits on it.
      const victim = await own.masterOf(new QueueKeys("wh:serve").forwarders);
      own.signal(victim, "SIGSTOP");
      let thawed = false;
      try {
        const startedAt = Date.now();
        const stopped = first.stop().then(() => Date.now() - startedAt);
        // The master stays frozen for 30 s at most: a stop still waiting then is the old behaviour.
        const tookMs = await Promise.race([stopped, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 30_000))]);
        expect(tookMs, "wh serve stopped while the master was frozen").toBeDefined();
        expect(first.stderr()).toMatch(
          /Redis did not answer for 5 s as forwarding stopped: its connections were closed; .*delivered again by the next forwarder/,
        );
      } finally {
        own.signal(victim, "SIGCONT");
        thawed = true;
      }
      expect(thawed).toBe(true);
      const next = await startServe(args, { cwd: await makeTempDir() }, inProcess);
      try {
        expect((await post(next.url, "/v1/batch", batch(1), { authorization: basic("wk") })).status).toBe(200);
        // Once the stopped forwarder's leases have lapsed (6 s), the next one takes every partition.
        await expect.poll(() => seen().ids.size, { timeout: 30_000, interval: 100 }).toBe(32);
      } finally {
        await next.stop();
      }
    } finally {
      await own.stop();
    }
  }, 150_000);
});
