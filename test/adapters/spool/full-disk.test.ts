import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Spool } from "../../../src/adapters/spool/spool.js";
import { OutputWriteError } from "../../../src/core/errors.js";
import { mountTmpfs } from "../../helpers/tmpfs.js";

const disk = mountTmpfs(256 * 1024);
afterAll(() => {
  if (typeof disk !== "string") disk.unmount();
});

describe.skipIf(typeof disk === "string")("Spool on a full disk (a real tmpfs)", () => {
  it("answers a write the disk refuses with an error, leaves no hole, and keeps every record it acknowledged across space freed and a reopen", async () => {
    if (typeof disk === "string") return;
    const dir = join(disk.dir, "spool");
    const filler = join(disk.dir, "filler");
    // Leave about 24 KB free: a few dozen records fit, then the disk refuses.
    writeFileSync(filler, Buffer.alloc(200 * 1024, 1));
    const { spool } = await Spool.open(dir, { maxBytes: 1e9 });
    const acknowledged: string[] = [];
    let refused = 0;
    const record = (n: number): string => JSON.stringify({ n, pad: "x".repeat(700) });
    let n = 0;
    // Concurrent groups, as a burst of requests: some are refused mid-write.
    for (let round = 0; round < 12; round += 1) {
      const groups = Array.from({ length: 4 }, () => [record(n++), record(n++)]);
      const answers = await Promise.allSettled(groups.map((texts) => spool.append(texts)));
      answers.forEach((answer, index) => {
        if (answer.status === "fulfilled") acknowledged.push(...(groups[index] as string[]));
        else {
          expect(answer.reason).toBeInstanceOf(OutputWriteError);
          refused += 1;
        }
      });
    }
    expect(refused).toBeGreaterThan(0);
    // Space is back: accepting goes on, in the same segment.
    rmSync(filler);
    for (let round = 0; round < 3; round += 1) {
      const texts = [record(n++), record(n++)];
      await spool.append(texts);
      acknowledged.push(...texts);
    }
    spool.close();
    for (const name of readdirSync(dir).filter((file) => file.endsWith(".ndjson"))) {
      expect(readFileSync(join(dir, name)).includes(0), `${name} holds NUL bytes`).toBe(false);
    }
    const again = await Spool.open(dir, { maxBytes: 1e9, check: (text) => (text.startsWith("{") ? undefined : "not JSON") });
    expect(again.quarantined).toBeUndefined();
    expect(again.recovered).toBe(acknowledged.length);
    const texts: string[] = [];
    const reader = again.spool.reader();
    for await (const window of reader) {
      texts.push(...window.map((record) => record.text));
      if (texts.length >= acknowledged.length) reader.stop();
    }
    expect(texts).toEqual(acknowledged);
    again.spool.close();
  });
});
