import { GROUP, type QueueKeys, type RedisClient } from "./redis-connection.js";
import type { PartitionLeases } from "./redis-leases.js";

/**
 * What ended since the last commit: the dead letters and the acks, written in one transaction
 * (the dead letters first), and kept and tried again while Redis is away.
 */
export class Commits {
  private readonly pendingAcks = new Map<number, string[]>();
  private pendingDead: Record<string, string>[] = [];
  private committing: Promise<void> | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: QueueKeys,
    private readonly leases: PartitionLeases,
    private readonly onError: (error: Error) => void,
    /** Once forwarding stops, a commit that fails is not tried again. */
    private readonly stopped: () => boolean,
  ) {}

  /** An event whose delivery ended: acknowledged (XACK, then removed) at the next commit. */
  ended(partition: number, id: string): void {
    const ids = this.pendingAcks.get(partition) ?? [];
    ids.push(id);
    this.pendingAcks.set(partition, ids);
  }

  /** The fields of a dead letter, written to the dead-letter stream before the acks of the same commit. */
  deadLetter(fields: Record<string, string>): void {
    this.pendingDead.push(fields);
  }

  /** The commit under way, if any. */
  get running(): Promise<void> | undefined {
    return this.committing;
  }

  /** Writes dead letters and acks (one transaction); kept and tried again while Redis is away. */
  commit(): Promise<void> {
    this.committing ??= (async () => {
      try {
        while (this.pendingDead.length > 0 || this.pendingAcks.size > 0) {
          const dead = this.pendingDead;
          const acks = new Map(this.pendingAcks);
          this.pendingDead = [];
          this.pendingAcks.clear();
          try {
            await this.write(dead, acks);
          } catch (error) {
            this.pendingDead.unshift(...dead);
            for (const [partition, ids] of acks) this.pendingAcks.set(partition, [...ids, ...(this.pendingAcks.get(partition) ?? [])]);
            this.onError(error as Error);
            if (this.stopped()) return;
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
      } finally {
        this.committing = undefined;
      }
    })();
    return this.committing;
  }

  private async write(dead: Record<string, string>[], acks: Map<number, string[]>): Promise<void> {
    const multi = this.client.multi();
    for (const fields of dead) multi.xAdd(this.keys.deadLetters, "*", fields);
    for (const [partition, ids] of acks) {
      multi.xAck(this.keys.stream(partition), GROUP, ids);
      multi.xDel(this.keys.stream(partition), ids);
    }
    await multi.exec();
    // Held until acknowledged: a history read meanwhile must not send them again, and a
    // partition is given up only once Redis knows they ended. A read sent before the
    // acknowledgement (on the other connection) may still bring them back as pending.
    for (const [partition, ids] of acks) {
      const tenure = this.leases.of(partition);
      if (tenure?.reads === 0) for (const id of ids) tenure.held.delete(id);
      else tenure?.acked.push(...ids);
    }
  }
}
