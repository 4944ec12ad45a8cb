import { randomInt } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { once } from "node:events";
import { resolve } from "node:path";
import type { Writable } from "node:stream";
import { limitHeapGrowth } from "../../adapters/v8-flags.js";
import { filledFields, SAMPLES, sampleMessage, SPEC_PAGES } from "../../core/samples/catalogue.js";
import { generateTraffic } from "../../core/samples/traffic.js";
import { SPEC_NAMES } from "../../core/samples/types.js";
import type { FlagValues } from "../flags/spec.js";
import type { generateFlags, samplesFlags } from "../flags/samples-tables.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";

/** `wh samples`: the catalogue, by part of the Spec: name, type and the fields each fills. */
export async function runSamples(flags: FlagValues<typeof samplesFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  const output = new Output(io, globals);
  const width = Math.max(...SAMPLES.map((sample) => sample.name.length));
  for (const spec of SPEC_NAMES) {
    if (flags.spec !== undefined && flags.spec !== spec) continue;
    output.result(`${output.out.bold(spec)} ${output.out.dim(SPEC_PAGES[spec])}`);
    for (const sample of SAMPLES.filter((each) => each.spec === spec)) {
      const fields = filledFields(sample);
      output.record({ name: sample.name, type: sample.type, spec, fields, message: sampleMessage(sample) });
      output.result(`  ${sample.name.padEnd(width)}  ${sample.type.padEnd(8)}  ${fields.join(", ") || "-"}`);
    }
  }
  output.log('wh send --sample "<name>" sends one (--prop, --trait, --user-id change it); wh samples generate writes traffic');
  return 0;
}

/** Lines gathered before a write: big enough that writes are few, small enough to hold nothing much. */
const CHUNK_CHARS = 64 * 1024;

/** `wh samples generate`: realistic NDJSON traffic, streamed to stdout or --out, reproducible with --seed. */
export async function runGenerate(flags: FlagValues<typeof generateFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  const output = new Output(io, globals);
  // A long stream of short-lived messages: V8's default would let the heap grow to several times what is alive.
  limitHeapGrowth();
  const seed = flags.seed ?? randomInt(0, 4_294_967_296);
  if (flags.seed === undefined) output.log(`seed ${seed} (--seed ${seed} writes the same lines again)`);
  const traffic = generateTraffic({ users: flags.users, events: flags.events, seed, start: flags.start });
  if (flags.out === undefined) {
    const written = await writeLines(traffic, io.stdout, io.signal);
    return written < flags.events ? 130 : 0;
  }
  // Written aside and renamed when complete: FILE is never a part of the traffic.
  const path = resolve(io.cwd, flags.out);
  const partial = `${path}.wh-partial`;
  const file = createWriteStream(partial);
  try {
    const written = await writeLines(traffic, file, io.signal);
    file.end();
    await once(file, "finish");
    if (written < flags.events) {
      await rm(partial, { force: true });
      output.warn(`interrupted after ${written} events; ${flags.out} was not written`);
      return 130;
    }
    await rename(partial, path);
  } catch (error) {
    file.destroy();
    await rm(partial, { force: true });
    throw error;
  }
  output.log(`wrote ${flags.events} events of ${flags.users} users to ${flags.out} (seed ${seed})`);
  return 0;
}

/**
 * Writes each message as a line, a chunk at a time, waiting for the stream to drain when it asks
 * to and letting the event loop turn between chunks (wh's stdout holds a turn's writes until the
 * turn ends): only a chunk is ever held. Returns how many were written before an abort.
 */
async function writeLines(messages: Iterable<object>, out: Writable, signal: AbortSignal): Promise<number> {
  let written = 0;
  let chunk = "";
  const flush = async (): Promise<void> => {
    const wrote = out.write(chunk);
    chunk = "";
    if (!wrote) await once(out, "drain", { signal }).catch(() => undefined);
    else await new Promise((next) => setImmediate(next));
  };
  for (const message of messages) {
    if (signal.aborted) return written;
    chunk += `${JSON.stringify(message)}\n`;
    written += 1;
    if (chunk.length >= CHUNK_CHARS) await flush();
  }
  if (chunk !== "") await flush();
  return written;
}
