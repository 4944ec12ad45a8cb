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

/** A fanout of `lanes` lanes over the spool, each lane's own reader keeping its records. */
function fanoutOf(lanes: number): SpoolFanout {
  return new SpoolFanout(spool, router, lanes, (lane) => ({
    line: (buffer, start, end) => router.line(buffer, start, end) === lane,
    committed: (text) => router.record(text, undefined) === lane,
  }));
}

/** `perLane` records for each of `lanes` lanes, numbered from `from`, spread in turn. */
const spread = (lanes: number, perLane: number, from = 0): string[] =>
  Array.from({ length: perLane * lanes }, (_, index) => JSON.stringify({ lane: index % lanes, n: from + Math.floor(index / lanes) }));

/** Lets the fanout's reader run until it is idle (it waits for a commit, or for a lane). */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe("SpoolFanout", () => {
  it("holds a bounded number of records over all its lanes while no consumer takes, and each lane still gets all of its own, in order", async () => {
    const fanout = fanoutOf(LANES);
    const texts = spread(LANES, PER_LANE);
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

  it("stops reading while every lane is behind, and reads on once one is fed again: every lane still gets all of its records, in order", async () => {
    const fanout = fanoutOf(3);
    // 300 a lane: each holds 256 and falls behind.
    await spool.append(spread(3, 300));
    await settle();
    const stoppedAt = fanout.position;
    await spool.append(spread(3, 100, 300));
    await settle();
    // Nothing it read now would be handed to anyone: it waits (it read every commit as it came, to pass over all of it),
    // and says each lane has at least its 400 waiting.
    expect(fanout.position).toBe(stoppedAt);
    expect(fanout.lag()).toBeGreaterThanOrEqual(400);
    // Lane 0's consumer takes: it reads alone up to there, is fed again, and the reader reads on.
    const first = fanout.lane(0)[Symbol.asyncIterator]();
    const got: SpoolRecord[] = [];
    while (got.length < 400) got.push(...(await next(first)));
    await spool.append(spread(3, 50, 400));
    while (got.length < 450) got.push(...(await next(first)));
    expect(fanout.position).toBe(spool.nextSeq);
    expect(got.map(({ text }) => JSON.parse(text))).toEqual(Array.from({ length: 450 }, (_, n) => ({ lane: 0, n })));
    // The others read theirs alone.
    for (const lane of [1, 2]) {
      const iterator = fanout.lane(lane)[Symbol.asyncIterator]();
      const theirs: SpoolRecord[] = [];
      while (theirs.length < 450) theirs.push(...(await next(iterator)));
      expect(theirs.map(({ text }) => JSON.parse(text))).toEqual(Array.from({ length: 450 }, (_, n) => ({ lane, n })));
      await iterator.return?.();
    }
    await first.return?.();
    fanout.stop();
  });
  it("hands a consumer at most its lane's share of the budget at once: one that stops in the middle (its webhook down) keeps little alive out of the lanes' count, and each lane still gets all of its records, in order", async () => {
    const fanout = fanoutOf(LANES);
    const busy = 8;
    const iterators = Array.from({ length: busy }, (_, lane) => fanout.lane(lane)[Symbol.asyncIterator]());
    // 256 for each of 8 lanes, 2,048 in all: every lane holds its own (the budget is not yet spent).
    await spool.append(spread(busy, 256));
    while (fanout.position < busy * 256) await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(
      iterators.map(async (iterator, lane) => {
        const batches: SpoolRecord[][] = [];
        while (batches.flat().length < 256) batches.push(await next(iterator));
        // A lane's share is 2,048 / 100 lanes = 20: handed whole, a lane's 256 were kept alive by a consumer that took 35.
        expect(Math.max(...batches.map((batch) => batch.length))).toBeLessThanOrEqual(Math.floor(2_048 / LANES));
        expect(batches.flat().map(({ text }) => JSON.parse(text))).toEqual(Array.from({ length: 256 }, (_, n) => ({ lane, n })));
        await iterator.return?.();
      }),
    );
    fanout.stop();
  });
  it("a lane reading alone gets a record longer than what it reads at once whole, in its place", async () => {
    const fanout = fanoutOf(2);
    // 300 a lane: each holds 256 and falls behind, so the rest is read alone, 64 KB at a time.
    await spool.append(spread(2, 300));
    await settle();
    const long = JSON.stringify({ lane: 0, n: 300, pad: "x".repeat(200_000) });
    await spool.append([long, JSON.stringify({ lane: 0, n: 301 })]);
    const iterator = fanout.lane(0)[Symbol.asyncIterator]();
    const got: SpoolRecord[] = [];
    while (got.length < 302) got.push(...(await next(iterator)));
    expect(got.map(({ text }) => (JSON.parse(text) as { n: number }).n)).toEqual(Array.from({ length: 302 }, (_, n) => n));
    expect(got[300]?.text).toBe(long);
    await iterator.return?.();
    fanout.stop();
  });
});
