import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { newClient, QueueKeys, type RedisClient } from "../../../src/adapters/redis/connection.js";
import { PartitionLeases } from "../../../src/adapters/redis/leases.js";
import { redisAvailable, startRedis, type TestRedis } from "../../redis/redis-server.js";

// The partition leases of wh serve's Redis queue at their edges, against a real redis-server: a
// renewal that finds another owner's lease gives the partition up (and leaves that lease alone);
// a lease whose renewal has not come back is no longer held once its time (the lease less the
// fence margin, from when the renewal was sent) has passed, even before its fence timer fires, and
// the fence gives it up then; a partition an earlier owner did not give up cleanly is read only
// after the takeover wait, one given up cleanly at once.

const LEASE_MS = 6_000;
const FENCE_MARGIN_MS = 1_000;
const TAKEOVER_WAIT_MS = 2_000;

let redis: TestRedis;
let client: RedisClient;
const started: PartitionLeases[] = [];
beforeAll(async () => {
  if (!redisAvailable) return;
  redis = await startRedis();
  client = newClient(redis.url);
  await client.connect();
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const leases of started.splice(0)) {
    await leases.stop();
    await leases.releaseAll();
  }
});
afterAll(async () => {
  await client?.destroy();
  await redis?.stop();
});

/** One partition's leases under a fresh prefix, ticking; `sentBefore` is performance.now() before the first tick. */
function leasesOf(keys: QueueKeys, name: string): { leases: PartitionLeases; sentBefore: number } {
  const leases = new PartitionLeases(client, keys, `${name}:${randomBytes(3).toString("hex")}`, 1);
  started.push(leases);
  const sentBefore = performance.now();
  leases.start((error) => {
    throw error;
  });
  return { leases, sentBefore };
}

const freshKeys = (): QueueKeys => new QueueKeys(`wh:edges:${randomBytes(4).toString("hex")}`);

async function until(check: () => boolean, ms: number, what: string): Promise<number> {
  const startedAt = performance.now();
  await expect.poll(check, { timeout: ms, interval: 20, message: what }).toBe(true);
  return performance.now() - startedAt;
}

describe.skipIf(!redisAvailable)("PartitionLeases (a real redis-server)", () => {
  it("gives up a partition whose lease another forwarder holds at its next renewal, and leaves that lease alone", async () => {
    const keys = freshKeys();
    const { leases } = leasesOf(keys, "first");
    await until(() => leases.partitionNumbers.length === 1, 3_000, "the partition taken");
    // Its lease lapsed (Redis away) and another forwarder took the partition.
    await client.set(keys.lease(0), "other", { PX: LEASE_MS });
    await until(() => leases.partitionNumbers.length === 0, 3_000, "the partition given up");
    expect(await client.get(keys.lease(0))).toBe("other");
    // Not renewed by the one that gave it up.
    expect(await client.pTTL(keys.lease(0))).toBeLessThan(LEASE_MS - 500);
  });

  it("holds a lease no longer once its time since the renewal was sent has passed, before its fence fires", async () => {
    const keys = freshKeys();
    const { leases, sentBefore } = leasesOf(keys, "stalled");
    await until(() => leases.readable().length === 1, 3_000, "the partition readable");
    // No renewal from now on; then the clock jumps, as after a stall of the event loop that holds the fence back too.
    await leases.stop();
    const stoppedAt = performance.now();
    const tenure = leases.of(0);
    if (tenure === undefined) throw new Error("the partition's tenure is gone");
    const clock = vi.spyOn(performance, "now");
    // The lease was taken (and perhaps renewed) between sentBefore and stoppedAt: it is surely held until the lease less the margin after sentBefore...
    clock.mockReturnValue(sentBefore + LEASE_MS - FENCE_MARGIN_MS - 50);
    expect(leases.holds(0, tenure)).toBe(true);
    // ...and surely not once that has passed since stoppedAt.
    clock.mockReturnValue(stoppedAt + LEASE_MS - FENCE_MARGIN_MS + 50);
    expect(leases.holds(0, tenure)).toBe(false);
    expect(leases.readable()).toEqual([]);
    expect(leases.partitionNumbers).toEqual([]);
    expect(tenure.lease.signal.aborted).toBe(true);
  });

  it("cuts a lease by its fence when renewals stop: given up before Redis could give it to another forwarder", async () => {
    const keys = freshKeys();
    const { leases } = leasesOf(keys, "fenced");
    await until(() => leases.partitionNumbers.length === 1, 3_000, "the partition taken");
    const tenure = leases.of(0);
    await leases.stop();
    const stoppedAt = performance.now();
    await until(() => tenure?.lease.signal.aborted === true, LEASE_MS + 1_000, "the fence to cut the lease");
    // Its last renewal was sent before stoppedAt: the fence fires before the lease can lapse in Redis.
    expect(performance.now() - stoppedAt).toBeLessThan(LEASE_MS);
    expect(leases.partitionNumbers).toEqual([]);
  }, 15_000);

  it("reads a partition taken over from an owner that did not give it up cleanly only after the takeover wait; a clean one at once", async () => {
    const unclean = freshKeys();
    // An earlier owner's mark, left when its lease lapsed.
    await client.set(unclean.taken(0), "gone");
    const { leases } = leasesOf(unclean, "successor");
    await until(() => leases.partitionNumbers.length === 1, 3_000, "the partition taken");
    const takenAt = performance.now();
    expect(leases.readable()).toEqual([]);
    await until(() => leases.readable().length === 1, TAKEOVER_WAIT_MS + 3_000, "the partition readable");
    expect(performance.now() - takenAt).toBeGreaterThanOrEqual(TAKEOVER_WAIT_MS - 100);

    const clean = freshKeys();
    const fresh = leasesOf(clean, "first-owner").leases;
    expect(await until(() => fresh.readable().length === 1, 3_000, "the clean partition readable")).toBeLessThan(TAKEOVER_WAIT_MS - 500);
  }, 15_000);
});
