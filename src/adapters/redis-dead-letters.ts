import type { QueueKeys, RedisClient } from "./redis-connection.js";

/** A dead letter: why (the record), the entry as it was queued, and the partition it came from. */
export interface RedisDeadLetter {
  id: string;
  record: string;
  entry: string;
  partition: number;
}

/** The dead-letter stream, oldest first; fields another program wrote come back as empty text. */
export async function listDeadLetters(client: RedisClient, keys: QueueKeys): Promise<RedisDeadLetter[]> {
  const entries = await client.xRange(keys.deadLetters, "-", "+");
  return (entries ?? []).map(({ id, message }) => ({
    id,
    record: String(message.record ?? ""),
    entry: String(message.entry ?? ""),
    partition: Number(message.partition ?? 0) || 0,
  }));
}

/**
 * Puts dead letters back into their partitions (and off the dead-letter stream), in one
 * transaction; `entryOf` says what each is put back as (default: the entry as it was queued).
 */
export async function replayDeadLetters(
  client: RedisClient,
  keys: QueueKeys,
  partitions: number,
  ids?: readonly string[],
  entryOf: (letter: RedisDeadLetter) => string = (letter) => letter.entry,
): Promise<number> {
  const all = await listDeadLetters(client, keys);
  const chosen = ids === undefined ? all : all.filter((letter) => ids.includes(letter.id));
  if (chosen.length === 0) return 0;
  const multi = client.multi();
  for (const letter of chosen) {
    multi.xAdd(keys.stream(letter.partition % partitions), "*", { r: entryOf(letter) });
    multi.xDel(keys.deadLetters, letter.id);
  }
  await multi.exec();
  return chosen.length;
}
