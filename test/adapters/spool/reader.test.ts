import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Spool, type SpoolRecord } from "../../../src/adapters/spool/spool.js";

// The spool reader's byte positions: a reader that caught up is handed records as they commit,
// and counts where they end in its segment; when it then falls behind (its consumer busy while
// more commit), it reads on from the file at that position. Records with multi-byte text (accents,
// CJK, an emoji) make a position counted in characters fall inside a record.

let dir: string;
let spool: Spool;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-spool-edges-"));
  ({ spool } = await Spool.open(dir, { maxBytes: 1_000_000_000 }));
});
afterEach(async () => {
  spool.close();
  await rm(dir, { recursive: true, force: true });
});

const text = (name: string): string => JSON.stringify({ type: "track", event: `Café 東京 ${name} 🎉`, properties: { city: "Zürich" } });
const plain = ({ seq, text }: SpoolRecord) => ({ seq, text });

/** The reader's next window, failing rather than waiting for ever. */
async function nextWindow(iterator: AsyncIterator<SpoolRecord[]>): Promise<SpoolRecord[]> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the reader handed nothing in 5 s")), 5_000));
  const result = await Promise.race([iterator.next(), timeout]);
  return result.done === true ? [] : result.value;
}

describe("SpoolReader's byte positions", () => {
  it("reads on from the file where the records it was handed end, in bytes, once it falls behind inside a segment", async () => {
    const iterator = spool.reader()[Symbol.asyncIterator]();
    // Caught up: handed two groups as they commit.
    for (const [seq, name] of [
      [0, "one"],
      [1, "two"],
    ] as const) {
      const handed = nextWindow(iterator);
      await spool.append([text(name)]);
      expect((await handed).map(plain)).toEqual([{ seq, text: text(name) }]);
    }
    // Its consumer is busy while more commit: it reads them from the file.
    await spool.append([text("three")]);
    await spool.append([text("four"), text("five")]);
    expect((await nextWindow(iterator)).map(plain)).toEqual([
      { seq: 2, text: text("three") },
      { seq: 3, text: text("four") },
      { seq: 4, text: text("five") },
    ]);
    await iterator.return?.();
  });

  it("reads on from the right place when it fell behind inside a segment it was handed the first record of", async () => {
    // A whole first segment (10,000 records, every one ended), then the second one's first record is handed over.
    const first = Array.from({ length: 10_000 }, (_, index) => `{"n":${index}}`);
    expect(await spool.append(first)).toHaveLength(10_000);
    for (let seq = 0; seq < 10_000; seq += 1) spool.markFinished(seq);
    const iterator = spool.reader()[Symbol.asyncIterator]();
    const handed = nextWindow(iterator);
    await spool.append([text("one")]);
    expect((await handed).map(plain)).toEqual([{ seq: 10_000, text: text("one") }]);
    await spool.append([text("two")]);
    await spool.append([text("three")]);
    expect((await nextWindow(iterator)).map(plain)).toEqual([
      { seq: 10_001, text: text("two") },
      { seq: 10_002, text: text("three") },
    ]);
    await iterator.return?.();
  });

  it("a reader from a record in the middle of a segment hands over that record and those after it, in order", async () => {
    await spool.append(["one", "two", "three", "four"].map(text));
    const iterator = spool.reader(undefined, 2)[Symbol.asyncIterator]();
    expect((await nextWindow(iterator)).map(plain)).toEqual([
      { seq: 2, text: text("three") },
      { seq: 3, text: text("four") },
    ]);
    await iterator.return?.();
  });
});
