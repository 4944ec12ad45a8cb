import { setMaxListeners } from "node:events";
import { GROUP, type QueueKeys, type RedisClient } from "./connection.js";
import { FENCE, idle, type Tenure } from "./tenure.js";

/** How long a partition's lease lasts without renewal; renewed every tick. */
const LEASE_MS = 6_000;
const TICK_MS = 1_000;
/**
 * An owner stops delivering a partition this long before its lease can lapse in Redis (counted
 * from when its last renewal was sent): timers fire late on a busy machine.
 */
const FENCE_MARGIN_MS = 1_000;
/**
 * A new owner of a partition that was not given up cleanly (a lease that lapsed: Redis away, a
 * crash) claims its events this long after taking it: by then the previous owner has cut its
 * deliveries (FENCE_MARGIN_MS before the lapse) and a read it had sent (blocking for up to
 * BLOCK_MS, see reader.ts) has been answered, so the two never deliver one partition at once.
 */
const TAKEOVER_WAIT_MS = 2_000;
/**
 * After Redis was away, a forwarder takes partitions only once its heartbeat has gone through
 * again for this long: forwarders that come back together count each other first, and none takes
 * every partition with its backlog (an extra one is given up only once what was read from it is
 * delivered).
 */
const SETTLE_MS = 1_000;
/** How often an owned partition's pending events are claimed and read again, so that none stays pending. */
const SWEEP_MS = 5_000;

/** XAUTOCLAIM of every pending event of the stream for the consumer ARGV[3] of group ARGV[2], from ARGV[4], fenced. */
const CLAIM = `${FENCE}return redis.call("xautoclaim", KEYS[1], ARGV[2], ARGV[3], 0, ARGV[4], "COUNT", 1000)`;

/**
 * Takes a free lease (KEYS[1]) and marks the partition taken (KEYS[2], kept until it is given up
 * cleanly): -1 when another holds the lease, 1 when the mark of an earlier owner was still there
 * (its lease lapsed), 0 when not.
 */
const TAKE = `if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return -1 end
local unclean = redis.call("exists", KEYS[2])
redis.call("set", KEYS[2], ARGV[1])
return unclean`;
const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
/** Gives up a lease still held; with ARGV[2] "clean" (nothing read is left unacknowledged or being read) the taken mark goes too. */
const RELEASE = `if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == "clean" then redis.call("del", KEYS[2]) end
return redis.call("del", KEYS[1])`;

/**
 * The partitions one forwarder owns, by leases it renews every tick: the heartbeat that counts
 * the live forwarders, taking and giving up partitions towards an even share, and claiming each
 * owned partition's pending events (see RedisQueue for why the owner's own clock decides).
 *
 * Each partition's renewal and sweep go on their own, not awaited with the others': on a cluster
 * each goes to its partition's master, and one that does not answer (frozen, unreachable) holds
 * only its own partitions, whose leases lapse by this process's clock, while the others' go on.
 */
export class PartitionLeases {
  private readonly owned = new Map<number, Tenure>();
  private ticker: NodeJS.Timeout | undefined;
  /** The heartbeat and the share under way. */
  private ticking: Promise<void> | undefined;
  /** The tenures whose renewal, and whose sweep, is on its way: one of each at a time per tenure. */
  private readonly renewing = new Set<Tenure>();
  private readonly sweeping = new Set<Tenure>();
  /** Those renewals and sweeps, until each has ended. */
  private readonly running = new Set<Promise<void>>();
  /** Since when every heartbeat has gone through in time (from the start: always); undefined after one did not. */
  private beatingSince: number | undefined = Number.NEGATIVE_INFINITY;
  private stopped = false;
  private tenuresTaken = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: QueueKeys,
    private readonly consumer: string,
    private readonly partitions: number,
  ) {}

  /** Ticks now and every TICK_MS until stop(); what goes wrong in a tick goes to `onError`. */
  start(onError: (error: Error) => void): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.renew(onError);
      this.sweep(onError);
      // One heartbeat at a time: one that waits on a frozen Redis is not joined by others, which
      // would all go on together with what they knew before when it answers.
      this.ticking ??= this.beat(onError).finally(() => (this.ticking = undefined));
    };
    tick();
    this.ticker = setInterval(tick, TICK_MS);
  }

  /** Stops ticking, once the heartbeat, renewals and sweeps under way (if any) have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.ticker);
    await Promise.all([this.ticking, ...this.running]);
  }

  /** Gives every lease back and leaves the forwarders' list (once stopped, after the last commit). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.owned].map(([partition, tenure]) => this.drop(partition, tenure)));
    await this.client.zRem(this.keys.forwarders, this.consumer).catch(() => undefined);
  }

  /** The partitions this process forwards now. */
  get partitionNumbers(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  /** The tenure of a partition this process owns. */
  of(partition: number): Tenure | undefined {
    return this.owned.get(partition);
  }

  /** The partitions to read now: held, not being given up, their pending events claimed. */
  readable(): [number, Tenure][] {
    return [...this.owned.entries()].filter(([partition, tenure]) => this.isReadable(partition, tenure));
  }

  /** The partition is to be read now under this tenure (see readable). */
  isReadable(partition: number, tenure: Tenure): boolean {
    return !tenure.draining && tenure.swept && this.holds(partition, tenure);
  }

  /** True while the partition's lease is this tenure's; one whose time ran out (its fence not yet fired) is dropped now. */
  holds(partition: number, tenure: Tenure): boolean {
    if (this.owned.get(partition) !== tenure) return false;
    if (performance.now() < tenure.validUntil) return true;
    this.fence();
    return false;
  }

  /**
   * A lease's time ran out: it is dropped, and with it every lease whose time runs out within a
   * tick (renewals go out together each tick, so when one is overdue so are all those its server
   * left unanswered), in one synchronous step.
   * Dropped one timer at a time, a delivery slot freed by one partition's cut would start an event
   * of another partition about to be cut, which would arrive twice: this way what arrives twice
   * after an outage is at most what the forwarder had in flight, its concurrency.
   */
  private fence(): void {
    const horizon = performance.now() + TICK_MS;
    for (const [partition, tenure] of this.owned) if (tenure.validUntil < horizon) void this.drop(partition, tenure);
  }

  /**
   * Ends a tenure: its deliveries are cut (their events stay pending), nothing more is read, and
   * the lease is released if it is still this process's (when Redis answers). Cleanly when it is
   * idle and was swept (a previous owner's takeover wait is over): the next owner need not wait.
   */
  async drop(partition: number, tenure: Tenure): Promise<void> {
    if (this.owned.get(partition) !== tenure) return;
    this.owned.delete(partition);
    clearTimeout(tenure.fence);
    tenure.lease.abort();
    const clean = tenure.swept && idle(tenure) ? "clean" : "unclean";
    await this.client
      .eval(RELEASE, { keys: [this.keys.lease(partition), this.keys.taken(partition)], arguments: [tenure.token, clean] })
      .catch(() => undefined);
  }

  /** Heartbeat, then taking or giving up partitions towards an even share (and sweeping those taken). */
  private async beat(onError: (error: Error) => void): Promise<void> {
    try {
      const now = Date.now();
      const members = this.keys.forwarders;
      await this.client.zAdd(members, { score: now, value: this.consumer });
      // A heartbeat answered late (a frozen Redis) is missed like one that failed.
      this.beatingSince = Date.now() - now > TICK_MS ? undefined : (this.beatingSince ?? now);
      await this.client.zRemRangeByScore(members, 0, now - LEASE_MS);
      const alive = Math.max(1, await this.client.zCard(members));
      await this.share(Math.ceil(this.partitions / alive), this.beatingSince !== undefined && now - this.beatingSince >= SETTLE_MS);
      if (!this.stopped) this.sweep(onError);
    } catch (error) {
      this.beatingSince = undefined;
      onError(error as Error);
    }
  }

  /**
   * Runs `task` for the tenure unless one of its kind (`busy`) is on its way already, without
   * waiting for it: what goes wrong in it goes to `onError`.
   */
  private launch(busy: Set<Tenure>, tenure: Tenure, task: () => Promise<void>, onError: (error: Error) => void): void {
    if (busy.has(tenure)) return;
    busy.add(tenure);
    const running: Promise<void> = task()
      .catch((error: Error) => onError(error))
      .finally(() => {
        busy.delete(tenure);
        this.running.delete(running);
      });
    this.running.add(running);
  }

  /**
   * Renews every lease held whose last renewal has been answered; one lost, or given up with
   * nothing of it left unacknowledged, is dropped. One answered late extends the lease from when
   * it was sent, as any does (see extend).
   */
  private renew(onError: (error: Error) => void): void {
    for (const [partition, tenure] of this.owned) {
      const renewal = async (): Promise<void> => {
        const sentAt = performance.now();
        const renewed = Number(await this.client.eval(RENEW, { keys: [this.keys.lease(partition)], arguments: [tenure.token, String(LEASE_MS)] }));
        if (this.owned.get(partition) !== tenure) return;
        if (renewed === 0 || (tenure.draining && idle(tenure))) await this.drop(partition, tenure);
        else this.extend(tenure, sentAt);
      };
      this.launch(this.renewing, tenure, renewal, onError);
    }
  }

  /** Gives up the highest-numbered partitions beyond `share` (once what was read from them has ended), or takes free ones up to it when `settled`. */
  private async share(share: number, settled: boolean): Promise<void> {
    const active = [...this.owned.entries()].filter(([, tenure]) => !tenure.draining);
    if (active.length > share) {
      for (const [, tenure] of active.sort(([a], [b]) => b - a).slice(0, active.length - share)) tenure.draining = true;
      return;
    }
    if (!settled) return;
    let wanted = share - active.length;
    const start = Number.parseInt(this.consumer.slice(-6), 16) % this.partitions;
    for (let step = 0; step < this.partitions && wanted > 0 && !this.stopped; step += 1) {
      const partition = (start + step) % this.partitions;
      if (this.owned.has(partition)) continue;
      if (await this.take(partition)) wanted -= 1;
    }
  }

  /** Takes the partition's lease if it is free; false when another forwarder holds it. */
  private async take(partition: number): Promise<boolean> {
    const sentAt = performance.now();
    this.tenuresTaken += 1;
    const token = `${this.consumer}/${this.tenuresTaken}`;
    const taken = Number(
      await this.client.eval(TAKE, { keys: [this.keys.lease(partition), this.keys.taken(partition)], arguments: [token, String(LEASE_MS)] }),
    );
    if (taken < 0) return false;
    const lease = new AbortController();
    // Every delivery in flight from the partition listens to it.
    setMaxListeners(0, lease.signal);
    const sweepAt = performance.now() + (taken === 1 ? TAKEOVER_WAIT_MS : 0);
    const tenure: Tenure = {
      token,
      lease,
      validUntil: 0,
      fence: undefined,
      sweepAt,
      swept: false,
      draining: false,
      held: new Set(),
      reads: 0,
      acked: [],
      history: undefined,
    };
    this.owned.set(partition, tenure);
    this.extend(tenure, sentAt);
    return true;
  }

  /**
   * Claims the pending events of each partition whose time has come (first: TAKEOVER_WAIT_MS after
   * taking it; then every SWEEP_MS): those an earlier owner read and never ended, and any read
   * late for another consumer. They are then read again, before new ones.
   */
  private sweep(onError: (error: Error) => void): void {
    for (const [partition, tenure] of this.owned) {
      if (tenure.draining || performance.now() < tenure.sweepAt || !this.holds(partition, tenure)) continue;
      this.launch(this.sweeping, tenure, () => this.sweepOne(partition, tenure), onError);
    }
  }

  private async sweepOne(partition: number, tenure: Tenure): Promise<void> {
    if (!tenure.swept) {
      try {
        await this.client.xGroupCreate(this.keys.stream(partition), GROUP, "0", { MKSTREAM: true });
      } catch (error) {
        if (!String((error as Error).message).includes("BUSYGROUP")) throw error;
      }
    }
    // The lease is no longer this tenure's: the next renewal drops it.
    if (!(await this.claimPending(partition, tenure))) return;
    tenure.history ??= "0";
    tenure.swept = true;
    tenure.sweepAt = performance.now() + SWEEP_MS;
  }

  /** Claims every pending event of the partition for this consumer, while the lease is the tenure's; false when it is not. */
  private async claimPending(partition: number, tenure: Tenure): Promise<boolean> {
    let start = "0-0";
    do {
      const claimed = (await this.client.eval(CLAIM, {
        keys: [this.keys.stream(partition), this.keys.lease(partition)],
        arguments: [tenure.token, GROUP, this.consumer, start],
      })) as [string, ...unknown[]] | null;
      if (claimed === null) return false;
      start = claimed[0];
    } while (start !== "0-0");
    return true;
  }

  /** A renewal (or the taking) sent at `sentAt` succeeded: the lease is surely ours until FENCE_MARGIN_MS before it can lapse. */
  private extend(tenure: Tenure, sentAt: number): void {
    tenure.validUntil = sentAt + LEASE_MS - FENCE_MARGIN_MS;
    clearTimeout(tenure.fence);
    tenure.fence = setTimeout(() => this.fence(), tenure.validUntil - performance.now());
  }
}
