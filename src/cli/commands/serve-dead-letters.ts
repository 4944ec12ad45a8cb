import { RedisQueue } from "../../adapters/redis-queue.js";
import { userOf } from "../../core/shard.js";
import { loadConfig } from "../../config/load.js";
import { UsageError } from "../../core/errors.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { neutralize } from "../../core/untrusted.js";
import type { FlagValues } from "../flags/spec.js";
import type { deadLettersReplayFlags } from "../flags/server-tables.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { Output } from "../render.js";

type DeadLetterFlags = FlagValues<typeof deadLettersReplayFlags>;

async function openQueue(flags: DeadLetterFlags, io: CliIo): Promise<RedisQueue> {
  const { config } = await loadConfig(io.cwd, flags.config);
  const url = flags.queue ?? config.queue;
  if (url === undefined)
    throw new UsageError("no queue: give --queue redis://… (or queue in the config); without one, dead letters are in --data-dir's dead-letters*.ndjson");
  return RedisQueue.connect(url, {});
}

/** `wh serve dead-letters list`: every dead letter of the Redis queue, oldest first. */
export async function runDeadLettersList(flags: DeadLetterFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const queue = await openQueue(flags, io);
  const output = new Output(io, globals);
  try {
    const letters = await queue.listDeadLetters();
    for (const letter of letters) {
      const parsedRecord = parseJson(letter.record);
      const record = (
        parsedRecord.ok && isJsonObject(parsedRecord.value) ? parsedRecord.value : { outcome: "unreadable", reason: "the dead letter is not one wh wrote" }
      ) as { outcome?: string; reason?: string; at?: string };
      const parsedEntry = parseJson(letter.entry);
      const event = parsedEntry.ok && isJsonObject(parsedEntry.value) && isJsonObject(parsedEntry.value.event) ? parsedEntry.value.event : undefined;
      output.record({ id: letter.id, partition: letter.partition, ...record, ...(event === undefined ? { unreadable: letter.entry } : { event }) });
      const what = event === undefined ? "(unreadable entry)" : `${String(event.type ?? "?")} ${userOf(event) ?? ""} ${String(event.messageId ?? "")}`;
      output.result(neutralize(`${letter.id}  ${record.at ?? ""}  ${what}  ${record.outcome ?? ""}: ${record.reason ?? ""}`));
    }
    output.log(`${letters.length} dead letter${letters.length === 1 ? "" : "s"} in ${queue.url}`);
    return 0;
  } finally {
    await queue.close();
  }
}

/** `wh serve dead-letters replay [--id ID…]`: back into their partitions, for the forwarders to deliver again. */
export async function runDeadLettersReplay(flags: DeadLetterFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const queue = await openQueue(flags, io);
  const output = new Output(io, globals);
  try {
    const ids = flags.id;
    if (ids !== undefined) {
      const known = new Set((await queue.listDeadLetters()).map((letter) => letter.id));
      const unknown = ids.filter((id) => !known.has(id));
      if (unknown.length > 0) throw new UsageError(`--id ${unknown.join(", ")}: no such dead letter in ${queue.url}`);
    }
    const replayed = await queue.replayDeadLetters(ids);
    output.record({ replayed });
    output.result(`${replayed} dead letter${replayed === 1 ? "" : "s"} put back in the queue, to be delivered again`);
    return 0;
  } finally {
    await queue.close();
  }
}
