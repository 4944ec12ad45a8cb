import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { lineHash } from "../../src/adapters/journal.js";
import { readLineBatches } from "../../src/adapters/line-reader.js";
import { skipFinishedLines } from "../../src/engine/resume.js";

const LINES = Array.from({ length: 10 }, (_, index) => `{"n":${index + 1}}`);

/** A journal that says lines 1..count finished, with their hashes. */
function finishedUpTo(count: number) {
  return { lines: Uint32Array.from(LINES.slice(0, count), (_, index) => index + 1), hashes: Uint32Array.from(LINES.slice(0, count), lineHash) };
}

/** The lines skipFinishedLines passes on, or the message it throws. */
async function passedOn(stream: Readable, finishedCount: number): Promise<number[] | string> {
  const passed: number[] = [];
  try {
    for await (const batch of skipFinishedLines(readLineBatches(stream), finishedUpTo(finishedCount), "events.ndjson", () => stream.readableEnded)) {
      passed.push(...batch.map((line) => line.number));
    }
  } catch (error) {
    return (error as Error).message;
  }
  return passed;
}

/** A stream of the lines, one chunk each, destroyed (as Ctrl-C does) after `stopAfter` of them. */
function stoppedAfter(stopAfter: number): Readable {
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent === stopAfter) {
        stream.destroy();
        return;
      }
      this.push(Buffer.from(`${LINES[sent]}\n`));
      sent += 1;
    },
  });
  return stream;
}

describe("--resume: skipping the lines an earlier part finished", () => {
  it("passes on the lines after the finished ones", async () => {
    expect(await passedOn(Readable.from([Buffer.from(`${LINES.join("\n")}\n`)]), 6)).toEqual([7, 8, 9, 10]);
  });

  it("refuses an input read to its end that is shorter than the journal says: it changed", async () => {
    expect(await passedOn(Readable.from([Buffer.from(`${LINES.slice(0, 4).join("\n")}\n`)]), 6)).toMatch(
      /journal records line 5 of events\.ndjson as finished, but the input has 4 lines: it changed/,
    );
  });

  it("ends quietly when the input is stopped (Ctrl-C) before the finished lines are all checked: a stop is not a changed input", async () => {
    expect(await passedOn(stoppedAfter(3), 6)).toEqual([]);
  });
});
