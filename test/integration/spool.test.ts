import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Spool } from "../../src/adapters/spool.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-spool-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const open = (maxBytes = 1_000_000_000): ReturnType<typeof Spool.open> => Spool.open(dir, { maxBytes });

describe("Spool", () => {
  it("numbers records in order and hands back, after a reopen, the ones that did not end", async () => {
    const { spool, unfinished } = open();
    expect(unfinished).toEqual([]);
    expect(await spool.append(["a", "b"])).toEqual([0, 1]);
    expect(await spool.append(["c"])).toEqual([2]);
    expect(spool.depth).toBe(3);
    spool.markFinished(1);
    spool.markFinished(1);
    spool.flush();
    expect(spool.depth).toBe(2);
    spool.close();
    const again = open();
    expect(again.unfinished).toEqual([
      { seq: 0, text: "a" },
      { seq: 2, text: "c" },
    ]);
    // New records go on from the last number, in a new segment.
    expect(await again.spool.append(["d"])).toEqual([3]);
    again.spool.close();
  });

  it("group-commits concurrent appends, each answered with its own numbers", async () => {
    const { spool } = open();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => spool.append([`r${index}-1`, `r${index}-2`])));
    expect(answers.flat()).toEqual(Array.from({ length: 100 }, (_, index) => index));
    spool.close();
    expect(open().unfinished.map((record) => record.text)).toEqual(Array.from({ length: 50 }, (_, index) => [`r${index}-1`, `r${index}-2`]).flat());
  });

  it("cuts off a torn last record and a partial last ack line (a crash mid-write)", async () => {
    const { spool } = open();
    await spool.append(["one", "two", "three"]);
    spool.markFinished(0);
    spool.flush();
    spool.close();
    const [segment] = readdirSync(dir).filter((name) => name.endsWith(".ndjson"));
    appendFileSync(join(dir, segment as string), '{"torn":');
    // "2" without its newline: not a whole ack, and never read as index 2.
    appendFileSync(join(dir, `${segment}.acks`), "2");
    const again = open();
    expect(again.unfinished.map((record) => record.text)).toEqual(["two", "three"]);
    expect(readFileSync(join(dir, segment as string), "utf8")).toBe("one\ntwo\nthree\n");
    expect(readFileSync(join(dir, `${segment}.acks`), "utf8")).toBe("0\n");
    again.spool.close();
  });

  it("removes a segment once every record in it ended, and says when it is full", async () => {
    const { spool } = open(60_000);
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

  it("removes segments an earlier run finished, and ignores acks that name no record", async () => {
    const { spool } = open();
    await spool.append(["a"]);
    spool.close();
    const [segment] = readdirSync(dir).filter((name) => name.endsWith(".ndjson"));
    writeFileSync(join(dir, `${segment}.acks`), "7\nnot a number\n0\n");
    const again = open();
    expect(again.unfinished).toEqual([]);
    expect(readdirSync(dir).filter((name) => name.endsWith(".ndjson"))).toEqual([]);
    again.spool.close();
  });

  it("lets one process at a time use a spool", () => {
    const { spool } = open();
    expect(() => open()).toThrow(/spool/);
    spool.close();
    open().spool.close();
  });
});
