import type { QueueKeys, RedisClient } from "./connection.js";

/** Dead letters read (and replayed) at a time, over all the dead-letter streams: list and replay hold about one page, whatever their length. */
const PAGE = 1_000;

/** A dead letter: why (the record), the entry as it was queued, and the partition it came from. */
export interface RedisDeadLetter {
  /**
   * What names it to `--id`: its stream entry id, prefixed with the partition (`3:1732262400000-0`)
   * where each partition has its dead-letter stream, as ids are unique within a stream only.
   */
  id: string;
  /** Its entry id in its dead-letter stream. */
  streamId: string;
  record: string;
  entry: string;
  partition: number;
}

/** A dead-letter stream, and the partition of its letters when the stream says it (see QueueKeys#deadLetterStreams). */
export type DeadLetterStream = { key: string; partition: number | undefined };

/**
 * One dead-letter stream, oldest first, `count` at a time (XRANGE … COUNT): those in it when the
 * listing starts (one dead-lettered again meanwhile, perhaps just replayed, is not met again).
 * Fields another program wrote come back as empty text.
 */
async function* deadLetterPages(client: RedisClient, stream: DeadLetterStream, count: number): AsyncGenerator<RedisDeadLetter[]> {
  const last = (await client.xRevRange(stream.key, "+", "-", { COUNT: 1 }))?.[0]?.id;
  if (last === undefined) return;
  for (let start = "-"; ; ) {
    const entries = (await client.xRange(stream.key, start, last, { COUNT: count })) ?? [];
    if (entries.length === 0) return;
    yield entries.map(({ id, message }) => ({
      id: stream.partition === undefined ? id : `${stream.partition}:${id}`,
      streamId: id,
      record: String(message.record ?? ""),
      entry: String(message.entry ?? ""),
      partition: stream.partition ?? (Number(message.partition ?? 0) || 0),
    }));
    start = `(${(entries.at(-1) as { id: string }).id}`;
  }
}

/** Stream ids ("ms-seq") in time order. */
function older(a: string, b: string): boolean {
  const [aMs, aSeq] = a.split("-").map(Number) as [number, number];
  const [bMs, bSeq] = b.split("-").map(Number) as [number, number];
  return aMs < bMs || (aMs === bMs && aSeq < bSeq);
}

/** The dead letters of every stream, oldest first (by their ids, so across streams by the time each was written). */
export async function* listDeadLetters(client: RedisClient, streams: readonly DeadLetterStream[]): AsyncGenerator<RedisDeadLetter> {
  const count = Math.max(10, Math.ceil(PAGE / streams.length));
  const heads = streams.map((stream) => ({ pages: deadLetterPages(client, stream, count), page: [] as RedisDeadLetter[] }));
  const refill = async (head: (typeof heads)[number]): Promise<boolean> => {
    if (head.page.length > 0) return true;
    const next = await head.pages.next();
    head.page = next.done === true ? [] : [...next.value];
    return head.page.length > 0;
  };
  let live = (await Promise.all(heads.map(async (head) => ((await refill(head)) ? head : undefined)))).filter((head) => head !== undefined);
  while (live.length > 0) {
    const oldest = live.reduce((best, head) => (older((head.page[0] as RedisDeadLetter).streamId, (best.page[0] as RedisDeadLetter).streamId) ? head : best));
    yield oldest.page.shift() as RedisDeadLetter;
    if (!(await refill(oldest))) live = live.filter((head) => head !== oldest);
  }
}

/**
 * Puts dead letters back into their partitions (and off their dead-letter stream), a page at a
 * time, each page of a stream in one transaction (a stream's letters and their partitions share a
 * slot): one cut short has put back whole pages, none twice. `entryOf` says what each is put back
 * as (default: the entry as it was queued).
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
  for (const stream of keys.deadLetterStreams(partitions)) {
    for await (const page of deadLetterPages(client, stream, PAGE)) {
      const chosen = wanted === undefined ? page : page.filter((letter) => wanted.has(letter.id));
      if (chosen.length === 0) continue;
      const multi = client.multi();
      for (const letter of chosen) {
        multi.xAdd(keys.stream(letter.partition % partitions), "*", { r: entryOf(letter) });
        multi.xDel(stream.key, letter.streamId);
      }
      await multi.exec();
      replayed += chosen.length;
    }
  }
  return replayed;
}
