import { byGroup, GROUP, type QueueKeys, type RedisClient } from "./connection.js";
import type { PartitionLeases } from "./leases.js";

/** A dead letter's fields, and the partition whose dead-letter stream it goes to. */
type DeadLetterWrite = { partition: number; fields: Record<string, string> };

/**
 * What ended since the last commit: the dead letters and the acks, written in one transaction per
 * transaction group (see QueueKeys#group: a dead letter and its acknowledgement are of one
 * partition, so always together), the dead letters first, and kept and tried again while Redis is away.
 */
export class Commits {
  private readonly pendingAcks = new Map<number, string[]>();
  private pendingDead: DeadLetterWrite[] = [];
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

  /** The fields of a dead letter, written to its partition's dead-letter stream before the acks of the same commit. */
  deadLetter(partition: number, fields: Record<string, string>): void {
    this.pendingDead.push({ partition, fields });
  }

  /** The commit under way, if any. */
  get running(): Promise<void> | undefined {
    return this.committing;
  }

  /** Writes dead letters and acks (a transaction per group); kept and tried again while Redis is away. */
  commit(): Promise<void> {
    this.committing ??= (async () => {
      try {
        while (this.pendingDead.length > 0 || this.pendingAcks.size > 0) {
          const dead = this.pendingDead;
          const acks = new Map(this.pendingAcks);
          this.pendingDead = [];
          this.pendingAcks.clear();
          const failed = await this.write(dead, acks);
          if (failed !== undefined) {
            this.onError(failed);
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

  /** Writes each group in its transaction; what a failed one held is put back for the next try, and its error returned. */
  private async write(dead: DeadLetterWrite[], acks: Map<number, string[]>): Promise<Error | undefined> {
    const items = [...dead.map((letter) => ({ partition: letter.partition, letter })), ...[...acks].map(([partition, ids]) => ({ partition, ids }))];
    const results = await Promise.allSettled(
      byGroup(this.keys, items, (item) => item.partition).map(async (group) => {
        try {
          await this.writeGroup(group);
        } catch (error) {
          this.pendingDead.unshift(...group.flatMap((item) => ("letter" in item ? [item.letter] : [])));
          for (const item of group) if ("ids" in item) this.pendingAcks.set(item.partition, [...item.ids, ...(this.pendingAcks.get(item.partition) ?? [])]);
          throw error;
        }
      }),
    );
    const failure = results.find((result) => result.status === "rejected");
    return failure === undefined ? undefined : (failure.reason as Error);
  }

  private async writeGroup(group: ({ partition: number; letter: DeadLetterWrite } | { partition: number; ids: string[] })[]): Promise<void> {
    const multi = this.client.multi();
    for (const item of group) if ("letter" in item) multi.xAdd(this.keys.deadLetters(item.partition), "*", item.letter.fields);
    const acks = group.flatMap((item) => ("ids" in item ? [[item.partition, item.ids] as const] : []));
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
