import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type LaneRouter, SpoolFanout } from "../../../src/adapters/spool/fanout.js";
import { Spool, type SpoolRecord } from "../../../src/adapters/spool/spool.js";

// One reader over a spool for many consumers (wh serve's sources). What the lanes hold for
// consumers that do not take (each source's webhook down) is bounded over all of them, not per
// lane: the rest waits on disk, and each lane reads it alone once its consumer takes again.

let dir: string;
let spool: Spool;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-spool-fanout-"));
  ({ spool } = await Spool.open(dir, { maxBytes: 1_000_000_000 }));
});
afterEach(async () => {
  spool.close();
  await rm(dir, { recursive: true, force: true });
});

const LANES = 100;
const PER_LANE = 300;

/** Records `{"lane":N,"n":M}`, told by their first bytes. */
const router: LaneRouter = {
  line: (buffer, start, end) => Number(/^\{"lane":(\d+)/.exec(buffer.toString("utf8", start, Math.min(end, start + 16)))?.[1]),
  record: (text) => (JSON.parse(text) as { lane: number }).lane,
};

/** The next records of a lane, failing rather than waiting for ever. */
async function next(iterator: AsyncIterator<SpoolRecord[]>): Promise<SpoolRecord[]> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the lane handed nothing in 5 s")), 5_000));
  const result = await Promise.race([iterator.next(), timeout]);
  return result.done === true ? [] : result.value;
}

describe("SpoolFanout", () => {
  it("holds a bounded number of records over all its lanes while no consumer takes, and each lane still gets all of its own, in order", async () => {
    const fanout = new SpoolFanout(spool, router, LANES, (lane) => ({
      line: (buffer, start, end) => router.line(buffer, start, end) === lane,
      committed: (text) => router.record(text, undefined) === lane,
    }));
    const texts = Array.from({ length: PER_LANE * LANES }, (_, index) => JSON.stringify({ lane: index % LANES, n: Math.floor(index / LANES) }));
    await spool.append(texts);
    while (fanout.position < texts.length) await new Promise((resolve) => setImmediate(resolve));
    const iterators = Array.from({ length: LANES }, (_, lane) => fanout.lane(lane)[Symbol.asyncIterator]());
    // What each lane held is what it hands first. A lane held 256 whatever the others held: 25,600 here.
    const held = await Promise.all(iterators.map(next));
    const total = held.reduce((sum, records) => sum + records.length, 0);
    expect(total).toBeLessThanOrEqual(4_096);
    expect(Math.min(...held.map((records) => records.length))).toBeGreaterThan(0);
    // The rest of each lane's records come from the files, in order.
    await Promise.all(
      iterators.map(async (iterator, lane) => {
        const got = [...(held[lane] as SpoolRecord[])];
        while (got.length < PER_LANE) got.push(...(await next(iterator)));
        expect(got.map(({ text }) => JSON.parse(text))).toEqual(Array.from({ length: PER_LANE }, (_, n) => ({ lane, n })));
        await iterator.return?.();
      }),
    );
    fanout.stop();
  });
});
