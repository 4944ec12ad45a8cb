import { once } from "node:events";
import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { Writable } from "node:stream";
import { RedisQueue } from "../../adapters/redis/queue.js";
import { limitHeapGrowth } from "../../adapters/v8-flags.js";
import { readSpoolDeadLetters, takeSpoolDeadLetters, type ReadableDeadLetter, type SpoolDeadLetter } from "../../adapters/spool/dead-letters.js";
import { userOf } from "../../core/shard.js";
import { loadConfig } from "../../config/load.js";
import { UsageError } from "../../core/errors.js";
import { redactUrlText } from "../../core/redact.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { neutralize } from "../../core/untrusted.js";
import { SpoolStore } from "../../engine/serve/spool-store.js";
import { redriven } from "../../engine/serve/stored-event.js";
import type { FlagValues } from "../flags/spec.js";
import type { deadLettersReplayFlags } from "../flags/server-tables.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";

type DeadLetterFlags = FlagValues<typeof deadLettersReplayFlags>;

/** Whose dead letters: the Redis queue's (--queue, or queue in the config), else the spool's in --data-dir. */
type Where = { queue: string } | { dataDir: string; sources: string[] };

async function whereDeadLetters(flags: DeadLetterFlags, io: CliIo): Promise<Where> {
  const { config } = await loadConfig(io.cwd, flags.config);
  const queue = flags.queue ?? config.queue;
  if (queue !== undefined) return { queue };
  const dataDir = resolve(io.cwd, flags.dataDir);
  let problem: string | undefined = "no such directory";
  try {
    problem = statSync(dataDir).isDirectory() ? undefined : "not a directory";
  } catch {
    // Named below, as a directory that is not there.
  }
  if (problem !== undefined)
    throw new UsageError(`--data-dir ${flags.dataDir}: ${problem}`, {
      hint: "give the --data-dir wh serve runs with (its spool and dead letters are there), or --queue redis://… for a Redis queue",
    });
  return { dataDir, sources: Object.keys(config.sources ?? {}) };
}

/** `wh serve dead-letters list`: every dead letter of the Redis queue, or of the spool, oldest first. */
export async function runDeadLettersList(flags: DeadLetterFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  // A long stream of letters, each garbage once written: see limitHeapGrowth.
  limitHeapGrowth();
  const where = await whereDeadLetters(flags, io);
  const output = new Output(io, globals);
  const count = "queue" in where ? await listQueue(where.queue, output, io.stdout) : await listSpool(where.dataDir, where.sources, output, io.stdout);
  output.log(`${count} dead letter${count === 1 ? "" : "s"} in ${"queue" in where ? redactUrlText(where.queue) : where.dataDir}`);
  return 0;
}

/** `wh serve dead-letters replay [--id ID…]`: back into their partitions, or into the spool, to be delivered again. */
export async function runDeadLettersReplay(flags: DeadLetterFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  limitHeapGrowth();
  const where = await whereDeadLetters(flags, io);
  const output = new Output(io, globals);
  if ("dataDir" in where) return replaySpool(where.dataDir, where.sources, flags.id, output);
  const queue = await RedisQueue.connect(where.queue, {});
  try {
    const ids = flags.id;
    if (ids !== undefined) requireKnown(ids, await knownIds(queue.listDeadLetters(), ids), queue.url);
    const replayed = await queue.replayDeadLetters(ids, (letter) => redriven(letter.entry, letter.record));
    output.record({ replayed });
    output.result(`${replayed} dead letter${replayed === 1 ? "" : "s"} put back in the queue, to be delivered again`);
    return 0;
  } finally {
    await queue.close();
  }
}

async function listQueue(url: string, output: Output, stdout: Writable): Promise<number> {
  const queue = await RedisQueue.connect(url, {});
  try {
    let count = 0;
    for await (const letter of queue.listDeadLetters()) {
      count += 1;
      await turnAfter(count, stdout);
      const parsedRecord = parseJson(letter.record);
      const record = (
        parsedRecord.ok && isJsonObject(parsedRecord.value) ? parsedRecord.value : { outcome: "unreadable", reason: "the dead letter is not one wh wrote" }
      ) as { outcome?: string; reason?: string; at?: string };
      const parsedEntry = parseJson(letter.entry);
      const event = parsedEntry.ok && isJsonObject(parsedEntry.value) && isJsonObject(parsedEntry.value.event) ? parsedEntry.value.event : undefined;
      output.record({ id: letter.id, partition: letter.partition, ...record, ...(event === undefined ? { unreadable: letter.entry } : { event }) });
      output.result(letterLine(letter.id, record.at, event, `${record.outcome ?? ""}: ${record.reason ?? ""}`));
    }
    return count;
  } finally {
    await queue.close();
  }
}

/** Letters listed in one turn of the event loop: stdout (a TurnWriter) writes what a turn wrote once it ends, so it holds theirs alone. */
const LISTED_PER_TURN = 1_000;

/** Every LISTED_PER_TURN letters: a turn of the event loop, and stdout drained if its reader is slow (a pipe), so the listing is never held. */
function turnAfter(count: number, stdout: Writable): Promise<unknown> | undefined {
  if (count % LISTED_PER_TURN !== 0) return undefined;
  return stdout.writableNeedDrain ? once(stdout, "drain") : new Promise((resolve) => setImmediate(resolve));
}

async function listSpool(dataDir: string, sources: readonly string[], output: Output, stdout: Writable): Promise<number> {
  let count = 0;
  for (const { id, file, fileLine, source, text, letter } of readSpoolDeadLetters(dataDir, sources)) {
    count += 1;
    await turnAfter(count, stdout);
    const where = { id, file, fileLine, ...(source === null ? {} : { source }) };
    if ("problem" in letter) {
      output.record({ ...where, outcome: "unreadable", reason: letter.problem, unreadable: text });
      output.result(neutralize(`${id}  ${file} line ${fileLine}: unreadable: ${letter.problem}`));
    } else {
      output.record({ ...where, ...letter.record, event: letter.event });
      output.result(letterLine(id, letter.record.at, letter.event, `${letter.record.outcome}: ${letter.record.reason}`));
    }
  }
  return count;
}

/** One dead letter on one line: id, when, the event's type, user and messageId, and why (all neutralised: the event is a client's). */
function letterLine(id: string, at: string | undefined, event: Record<string, unknown> | undefined, why: string): string {
  const what = event === undefined ? "(unreadable entry)" : `${String(event.type ?? "?")} ${userOf(event) ?? ""} ${String(event.messageId ?? "")}`;
  return neutralize(`${id}  ${at ?? ""}  ${what}  ${why}`);
}

function requireKnown(ids: readonly string[], known: ReadonlySet<string>, where: string): void {
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length > 0) throw new UsageError(`--id ${unknown.join(", ")}: no such dead letter in ${where}`, { hint: "nothing was put back" });
}

/**
 * Puts the spool's dead letters (or those `--id` names) back into the spool, for the next wh serve
 * on it to deliver: taking the spool's lock, so that no wh serve delivers or dead-letters meanwhile.
 * A file at a time, a batch at a time (never all in memory): each batch is appended to the spool
 * and synced, each record naming its dead letter, before the file is rewritten without them, so
 * that a replay cut short is finished by the next open of the spool, never put back twice. A line
 * that is not a dead letter with an event stays in its file, named by its line.
 */
async function replaySpool(dataDir: string, sources: readonly string[], ids: readonly string[] | undefined, output: Output): Promise<number> {
  const store = await SpoolStore.open({ dataDir, maxBytes: Number.POSITIVE_INFINITY, onRecovered: () => undefined, onWarning: (line) => output.warn(line) });
  try {
    const chosen = ids === undefined ? undefined : new Set(ids);
    if (ids !== undefined) requireKnown(ids, await knownIds(readSpoolDeadLetters(dataDir, sources), ids), dataDir);
    let replayed = 0;
    let left = 0;
    const take = (letter: SpoolDeadLetter): letter is ReadableDeadLetter => {
      if (chosen !== undefined && !chosen.has(letter.id)) return false;
      if (!("problem" in letter.letter)) return true;
      left += 1;
      output.warn(neutralize(`${letter.file} line ${letter.fileLine}: ${letter.letter.problem}: left in the file`));
      return false;
    };
    for (const batch of takeSpoolDeadLetters(dataDir, sources, take)) {
      await store.putBack(batch.map(({ id, source, letter }) => ({ id, source, ...letter })));
      replayed += batch.length;
    }
    output.record({ replayed, left });
    output.result(`${replayed} dead letter${replayed === 1 ? "" : "s"} put back in the spool of ${dataDir}: the next wh serve on it delivers them`);
    return left === 0 ? 0 : 1;
  } finally {
    await store.close();
  }
}

/** Which of `wanted` are the ids of dead letters (read one at a time, none held). */
async function knownIds(letters: Iterable<{ id: string }> | AsyncIterable<{ id: string }>, wanted: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>();
  for await (const { id } of letters) if (wanted.includes(id)) known.add(id);
  return known;
}
