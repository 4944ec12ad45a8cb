import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CliIo } from "../../../src/cli/wiring/io.js";
import { readKeys } from "../../../src/cli/wiring/keys.js";
import { testIo } from "../../helpers/test-io.js";

/** An io whose stdin says it is a terminal, recording its raw mode, and counting Ctrl-Cs. */
function terminalIo(withInterrupt = true) {
  const modes: boolean[] = [];
  const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: (raw: boolean) => modes.push(raw) });
  let interrupts = 0;
  const io: CliIo = { ...testIo({ cwd: "/", env: {} }).io, stdin, interrupt: withInterrupt ? () => (interrupts += 1) : undefined };
  return { io, stdin, modes, interrupts: () => interrupts };
}

describe("readKeys", () => {
  it("reads keys raw while running: r's action, Ctrl-C as SIGINT would, and gives the terminal back", async () => {
    const { io, stdin, modes, interrupts } = terminalIo();
    let retried = 0;
    const keys = readKeys(io, false, { r: () => (retried += 1) });
    expect(keys).toBeDefined();
    expect(modes).toEqual([true]);
    stdin.write("rxR\u0003");
    await new Promise((resolve) => setImmediate(resolve));
    expect(retried).toBe(2);
    expect(interrupts()).toBe(1);
    keys?.stop();
    expect(modes).toEqual([true, false]);
    expect(stdin.isPaused()).toBe(true);
  });

  it("reads nothing when the command reads its input from stdin, when stdin is no terminal, or with no interrupt to pass Ctrl-C on to", () => {
    expect(readKeys(terminalIo().io, true, {})).toBeUndefined();
    expect(readKeys(terminalIo(false).io, false, {})).toBeUndefined();
    const { io } = terminalIo();
    expect(readKeys({ ...io, stdin: Object.assign(new PassThrough(), { isTTY: false }) }, false, {})).toBeUndefined();
  });
});
