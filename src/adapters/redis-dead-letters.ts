import type { QueueKeys, RedisClient } from "./redis-connection.js";

/** Dead letters read (and replayed) at a time: list and replay hold one page, whatever the stream's length. */
const PAGE = 1_000;

/** A dead letter: why (the record), the entry as it was queued, and the partition it came from. */
export interface RedisDeadLetter {
  id: string;
  record: string;
  entry: string;
  partition: number;
}

/**
 * The dead-letter stream, oldest first, a page at a time (XRANGE … COUNT): those in it when the
 * listing starts (one dead-lettered again meanwhile, perhaps just replayed, is not met again).
 * Fields another program wrote come back as empty text.
 */
export async function* deadLetterPages(client: RedisClient, keys: QueueKeys): AsyncGenerator<RedisDeadLetter[]> {
  const last = (await client.xRevRange(keys.deadLetters, "+", "-", { COUNT: 1 }))?.[0]?.id;
  if (last === undefined) return;
  for (let start = "-"; ; ) {
    const entries = (await client.xRange(keys.deadLetters, start, last, { COUNT: PAGE })) ?? [];
    if (entries.length === 0) return;
    yield entries.map(({ id, message }) => ({
      id,
      record: String(message.record ?? ""),
      entry: String(message.entry ?? ""),
      partition: Number(message.partition ?? 0) || 0,
    }));
    start = `(${(entries.at(-1) as { id: string }).id}`;
  }
}

/** The dead letters one at a time (see deadLetterPages). */
export async function* listDeadLetters(client: RedisClient, keys: QueueKeys): AsyncGenerator<RedisDeadLetter> {
  for await (const page of deadLetterPages(client, keys)) yield* page;
}

/**
 * Puts dead letters back into their partitions (and off the dead-letter stream), a page at a
 * time, each page in one transaction: one cut short has put back whole pages, none twice.
 * `entryOf` says what each is put back as (default: the entry as it was queued).
 */
export async function replayDeadLetters(
  client: RedisClient,
  keys: QueueKeys,
  partitions: number,
  ids?: readonly string[],
  entryOf: (letter: RedisDeadLetter) => string = (letter) => letter.entry,
): Promise<number> {
  const wanted = ids === undefined ? undefined : new Set(ids);
  let replayed = 0;
  for await (const page of deadLetterPages(client, keys)) {
    const chosen = wanted === undefined ? page : page.filter((letter) => wanted.has(letter.id));
    if (chosen.length === 0) continue;
    const multi = client.multi();
    for (const letter of chosen) {
      multi.xAdd(keys.stream(letter.partition % partitions), "*", { r: entryOf(letter) });
      multi.xDel(keys.deadLetters, letter.id);
    }
    await multi.exec();
    replayed += chosen.length;
  }
  return replayed;
}
