import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { removeTempDirs } from "../../helpers/run-wh.js";

// Colours are decided from the command's io (its env, its flags, whether its stream is a
// terminal), never from the process running it. In-process.

const server = closedAfterEach();
afterAll(removeTempDirs);

const ESC = "\u001b[";

describe("colours", () => {
  it.each([
    ["off a terminal", false, {}, [], false],
    ["on a terminal", true, { NO_COLOR: undefined, TERM: "xterm" }, [], true],
    ["on a dumb terminal", true, { NO_COLOR: undefined, TERM: "dumb" }, [], false],
    ["on a terminal, with NO_COLOR=1", true, { TERM: "xterm" }, [], false],
    ["off a terminal, with FORCE_COLOR=1", false, { FORCE_COLOR: "1", NO_COLOR: undefined }, [], true],
    ["on a terminal, with FORCE_COLOR=0", true, { FORCE_COLOR: "0", NO_COLOR: undefined, TERM: "xterm" }, [], false],
    ["with FORCE_COLOR=1 and NO_COLOR=1", false, { FORCE_COLOR: "1", NO_COLOR: "1" }, [], false],
    ["with FORCE_COLOR=1 and --no-color", false, { FORCE_COLOR: "1", NO_COLOR: undefined }, ["--no-color"], false],
  ] as const)("%s", async (_label, isTTY, env, flags, painted) => {
    const receiver = await server();
    const result = await runInProcess([...flags, "send", "track", "--user-id", "u1", "--event", "E", "--secret", "s", "--url", receiver.url], { env, isTTY });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr.includes(ESC)).toBe(painted);
  });
});
