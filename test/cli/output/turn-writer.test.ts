import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { TurnWriter } from "../../../src/cli/output/turn-writer.js";

function recorder(): { target: Writable; writes: string[] } {
  const writes: string[] = [];
  const target = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString());
      done();
    },
  });
  return { target, writes };
}

describe("TurnWriter", () => {
  it("passes the lines of one turn of the loop on in one write, in order, at the end of the turn", async () => {
    const { target, writes } = recorder();
    const out = new TurnWriter(target);
    out.write("a\n");
    out.write("b\n");
    out.write(Buffer.from("c\n"));
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    out.write("d\n");
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(["a\nb\nc\n", "d\n"]);
  });

  it("writes what it holds at once on flushNow (before a forced exit) and at end()", async () => {
    const { target, writes } = recorder();
    const out = new TurnWriter(target);
    out.write("held\n");
    out.flushNow();
    expect(writes).toEqual(["held\n"]);
    out.write("last\n");
    await new Promise<void>((resolve) => out.end(resolve));
    expect(writes).toEqual(["held\n", "last\n"]);
  });
});
