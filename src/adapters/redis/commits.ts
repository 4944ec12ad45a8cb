import { GROUP, type QueueKeys, type RedisClient } from "./connection.js";
import type { PartitionLeases } from "./leases.js";

/** A dead letter's fields, and the partition whose dead-letter stream it goes to. */
type DeadLetterWrite = { partition: number; fields: Record<string, string> };

/** What one transaction writes: dead letters, then acks. */
type GroupItem = { partition: number; letter: DeadLetterWrite } | { partition: number; ids: string[] };

/**
 * What ended since the last commit: the dead letters and the acks, written in one transaction per
 * transaction group (see QueueKeys#group: a dead letter and its acknowledgement are of one
 * partition, so always together), the dead letters first, and kept and tried again while Redis is
 * away. Each group is written on its own, one transaction at a time: on a cluster a master that
 * does not answer holds only its own partitions' acks.
 */
export class Commits {
  private readonly pendingAcks = new Map<number, string[]>();
  private pendingDead: DeadLetterWrite[] = [];
  /** The writes under way, by transaction group. */
  private readonly writing = new Map<string, Promise<void>>();

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

  /** The writes under way, if any, until each has ended. */
  get running(): Promise<void> | undefined {
    return this.writing.size === 0 ? undefined : Promise.all(this.writing.values()).then(() => undefined);
  }

  /** Writes dead letters and acks (a transaction per group, each group on its own); kept and tried again while Redis is away. */
  commit(): Promise<void> {
    const groups = new Set([...this.pendingDead.map((letter) => letter.partition), ...this.pendingAcks.keys()].map((partition) => this.keys.group(partition)));
    for (const group of groups)
      if (!this.writing.has(group))
        this.writing.set(
          group,
          this.flush(group).finally(() => this.writing.delete(group)),
        );
    return this.running ?? Promise.resolve();
  }

  /** Writes the group's dead letters and acks until none are left (what a failed write held is put back and tried again). */
  private async flush(group: string): Promise<void> {
    for (;;) {
      const ours = (partition: number): boolean => this.keys.group(partition) === group;
      const items: GroupItem[] = this.pendingDead.filter((letter) => ours(letter.partition)).map((letter) => ({ partition: letter.partition, letter }));
      this.pendingDead = this.pendingDead.filter((letter) => !ours(letter.partition));
      for (const [partition, ids] of this.pendingAcks)
        if (ours(partition)) {
          items.push({ partition, ids });
          this.pendingAcks.delete(partition);
        }
      if (items.length === 0) return;
      try {
        await this.writeGroup(items);
      } catch (error) {
        this.pendingDead.unshift(...items.flatMap((item) => ("letter" in item ? [item.letter] : [])));
        for (const item of items) if ("ids" in item) this.pendingAcks.set(item.partition, [...item.ids, ...(this.pendingAcks.get(item.partition) ?? [])]);
        this.onError(error as Error);
        if (this.stopped()) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private async writeGroup(group: GroupItem[]): Promise<void> {
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
