import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CliIo } from "../../../src/cli/wiring/io.js";
import { Output } from "../../../src/cli/output/render.js";

/** A terminal-like stderr that records what is written to it. */
function terminal(): { io: CliIo; written: () => string } {
  // The parts of a tty.WriteStream that ora uses.
  const stderr = Object.assign(new PassThrough(), { isTTY: true, columns: 80, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
  let text = "";
  stderr.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const io: CliIo = { stdout: new PassThrough(), stderr, stdin: new PassThrough(), env: {}, cwd: process.cwd(), signal: new AbortController().signal };
  return { io, written: () => text };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("Output's spinner", () => {
  it("makes one spinner however many calls arrive while ora loads", async () => {
    const { io, written } = terminal();
    const output = new Output(io, {});
    const warnings: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args);
    try {
      await Promise.all([output.spin("one"), output.spin("two"), output.spin("three")]);
      await pause(200);
      output.stopSpinner();
    } finally {
      console.warn = warn;
    }
    expect(warnings).toEqual([]);
    expect(written()).toContain("three");
    expect(written()).not.toMatch(/Multiple concurrent spinners/);
  });

  it("never starts a spinner that was stopped while ora loaded", async () => {
    const { io, written } = terminal();
    const output = new Output(io, {});
    const spinning = output.spin("loading");
    output.stopSpinner();
    await spinning;
    const after = written().length;
    await pause(300);
    expect(written().length).toBe(after);
  });

  it("shows no spinner on a terminal of no width", async () => {
    const { io, written } = terminal();
    (io.stderr as { columns?: number }).columns = 0;
    const output = new Output(io, {});
    await output.spin("nothing");
    await pause(200);
    expect(output.interactive).toBe(false);
    expect(written()).toBe("");
  });
});
