import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Spool, type SpoolRecord } from "../../../src/adapters/spool/spool.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-spool-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Opens the spool, and reads what it holds still to deliver (as a forwarder's reader does). */
async function open(maxBytes = 1_000_000_000): Promise<{ spool: Spool; unfinished: SpoolRecord[] }> {
  const { spool } = await Spool.open(dir, { maxBytes });
  return { spool, unfinished: await unfinishedOf(spool) };
}

async function unfinishedOf(spool: Spool): Promise<SpoolRecord[]> {
  const records: SpoolRecord[] = [];
  if (spool.depth === 0) return records;
  const reader = spool.reader();
  for await (const window of reader) {
    records.push(...window.map(({ seq, text }) => ({ seq, text })));
    if (records.length >= spool.depth) reader.stop();
  }
  return records;
}

describe("Spool", () => {
  it("numbers records in order and hands back, after a reopen, the ones that did not end", async () => {
    const { spool, unfinished } = await open();
    expect(unfinished).toEqual([]);
    expect(await spool.append(["a", "b"])).toEqual([0, 1]);
    expect(await spool.append(["c"])).toEqual([2]);
    expect(spool.depth).toBe(3);
    spool.markFinished(1);
    spool.markFinished(1);
    spool.flush();
    expect(spool.depth).toBe(2);
    spool.close();
    const again = await open();
    expect(again.unfinished).toEqual([
      { seq: 0, text: "a" },
      { seq: 2, text: "c" },
    ]);
    // New records go on from the last number, in a new segment.
    expect(await again.spool.append(["d"])).toEqual([3]);
    again.spool.close();
  });

  it("group-commits concurrent appends, each answered with its own numbers", async () => {
    const { spool } = await open();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => spool.append([`r${index}-1`, `r${index}-2`])));
    expect(answers.flat()).toEqual(Array.from({ length: 100 }, (_, index) => index));
    spool.close();
    expect((await open()).unfinished.map((record) => record.text)).toEqual(Array.from({ length: 50 }, (_, index) => [`r${index}-1`, `r${index}-2`]).flat());
  });

  it("cuts off a torn last record and a partial last ack line (a crash mid-write)", async () => {
    const { spool } = await open();
    await spool.append(["one", "two", "three"]);
    spool.markFinished(0);
    spool.flush();
    spool.close();
    const [segment] = readdirSync(dir).filter((name) => name.endsWith(".ndjson"));
    appendFileSync(join(dir, segment as string), '{"torn":');
    // "2" without its newline: not a whole ack, and never read as index 2.
    appendFileSync(join(dir, `${segment}.acks`), "2");
    const again = await open();
    expect(again.unfinished.map((record) => record.text)).toEqual(["two", "three"]);
    expect(readFileSync(join(dir, segment as string), "utf8")).toBe("one\ntwo\nthree\n");
    expect(readFileSync(join(dir, `${segment}.acks`), "utf8")).toBe("0\n");
    again.spool.close();
  });

  it("removes a segment once every record in it ended, and says when it is full", async () => {
    const { spool } = await open(60_000);
    const seqs = await spool.append(Array.from({ length: 10_000 }, () => "x"));
    expect(spool.bytes).toBe(20_000);
    expect(spool.full(40_000)).toBe(false);
    expect(spool.full(40_001)).toBe(true);
    await spool.append(["next"]);
    for (const seq of seqs) spool.markFinished(seq);
    spool.flush();
    expect(spool.bytes).toBe(5);
    expect(readdirSync(dir).filter((name) => name.endsWith(".ndjson"))).toEqual(["0000000000010000.ndjson"]);
    spool.close();
  });

  it("writes each group's records as their UTF-8 lines, whatever their characters and however large the group, in the order they were appended", async () => {
    const { spool } = await open();
    // Multi-byte characters, an emoji's surrogate pair and a lone surrogate (written as U+FFFD, as Buffer.from writes it).
    const groups = [
      ["é€😀", "plain", "\ud800 alone"],
      ["a"],
      ["ü".repeat(100), "ß"],
      // Past the buffer commits reuse (its bound, 3 bytes a code unit, is over 8 MiB).
      Array.from({ length: 3 }, (_, index) => `${index}${"ü".repeat(1_000_000)}`),
      ["after the large one", "ß"],
    ];
    // The first three at once: the two that arrive while the first commits share the next commit, encoded one after the other.
    await Promise.all(groups.slice(0, 3).map((texts) => spool.append(texts)));
    for (const texts of groups.slice(3)) await spool.append(texts);
    const [segment] = readdirSync(dir).filter((name) => name.endsWith(".ndjson"));
    const written = readFileSync(join(dir, segment as string));
    expect(written.equals(Buffer.from(groups.map((texts) => `${texts.join("\n")}\n`).join("")))).toBe(true);
    expect(spool.bytes).toBe(written.length);
    spool.close();
  });

  it("keeps what an append attaches only while readers follow the commits: a reader that catches up meanwhile gets the text alone", async () => {
    const { spool } = await open();
    // No reader yet: nothing to hand "first" to; the reader that starts waiting before the commit gets the record without it.
    const appended = spool.append(["one"], ["first"]);
    const reader = spool.reader();
    expect(await reader.read()).toEqual([{ seq: 0, text: "one", attached: undefined }]);
    await appended;
    // It waited for that commit: while it follows them, appends keep what they attach, even made before it waits again.
    const next = spool.append(["two"], ["second"]);
    expect(await reader.read()).toEqual([{ seq: 1, text: "two", attached: "second" }]);
    await next;
    spool.close();
  });

  it("removes segments an earlier run finished, and ignores acks that name no record", async () => {
    const { spool } = await open();
    await spool.append(["a"]);
    spool.close();
    const [segment] = readdirSync(dir).filter((name) => name.endsWith(".ndjson"));
    writeFileSync(join(dir, `${segment}.acks`), "7\nnot a number\n0\n");
    const again = await open();
    expect(again.unfinished).toEqual([]);
    expect(readdirSync(dir).filter((name) => name.endsWith(".ndjson"))).toEqual([]);
    again.spool.close();
  });

  it("lets one process at a time use a spool", async () => {
    const { spool } = await open();
    await expect(open()).rejects.toThrow(/spool/);
    spool.close();
    (await open()).spool.close();
  });

  it("acks records past the first segment: across reopens only the records not ended come back, each once", async () => {
    const first = await open();
    // Appended as three groups, so three segments (a segment is sealed after the group that fills it).
    const seqs: number[] = [];
    for (const [from, to] of [
      [0, 10_000],
      [10_000, 20_000],
      [20_000, 25_000],
    ] as const) {
      seqs.push(...(await first.spool.append(Array.from({ length: to - from }, (_, index) => `r${from + index}`))));
    }
    expect(readdirSync(dir).filter((name) => name.endsWith(".ndjson"))).toHaveLength(3);
    // End all but three records, one in each segment (0-9999, 10000-19999, 20000-24999).
    for (const seq of seqs) if (![5, 12_345, 24_999].includes(seq)) first.spool.markFinished(seq);
    first.spool.flush();
    first.spool.close();
    const second = await open();
    expect(second.unfinished).toEqual([
      { seq: 5, text: "r5" },
      { seq: 12_345, text: "r12345" },
      { seq: 24_999, text: "r24999" },
    ]);
    second.spool.markFinished(12_345);
    second.spool.close();
    const third = await open();
    expect(third.unfinished.map((record) => record.seq)).toEqual([5, 24_999]);
    expect(await third.spool.append(["next", "after"])).toEqual([25_000, 25_001]);
    // A reopened spool appends to a new segment that starts at 25,000, not at a multiple of the
    // segment size: the ack of its first record must still name index 0 of that segment.
    third.spool.markFinished(25_000);
    third.spool.close();
    const fourth = await open();
    expect(fourth.unfinished.map((record) => record.seq)).toEqual([5, 24_999, 25_001]);
    fourth.spool.close();
  });

  it("reads a backlog a window at a time from disk, passing over records that ended, then hands new records over as they commit", async () => {
    const { spool } = await open();
    const texts = Array.from({ length: 30_000 }, (_, index) => JSON.stringify({ index, pad: "x".repeat(60) }));
    await spool.append(texts);
    for (let seq = 0; seq < 30_000; seq += 2) spool.markFinished(seq);
    const reader = spool.reader();
    const seen: number[] = [];
    let windows = 0;
    for await (const window of reader) {
      windows += 1;
      for (const record of window) {
        if (record.seq < 30_000) expect(record.text).toBe(texts[record.seq]);
        seen.push(record.seq);
      }
      // Appended once the reader waits at the end: handed over as committed, with what was attached.
      if (seen.length === 15_000) setTimeout(() => void spool.append(["late"], ["attached"]), 50);
      if (seen.length === 15_001) {
        expect(window).toEqual([{ seq: 30_000, text: "late", attached: "attached" }]);
        reader.stop();
      }
    }
    expect(seen).toEqual([...Array.from({ length: 15_000 }, (_, index) => index * 2 + 1), 30_000]);
    expect(windows).toBeGreaterThan(2);
    spool.close();
  });
});
