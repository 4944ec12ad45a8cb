import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { inProcess, startInProcess } from "../../helpers/in-process.js";
import { lines, makeTempDir, removeTempDirs, STACK_TRACE, type WhProcess, killedAfterEach } from "../../helpers/run-wh.js";
import { eventually, post, SECRET } from "./serve-helpers.js";

/** An OSC window title, a clear screen, an 8-bit CSI and an 8-bit OSC: what a hostile sender puts in a field. */
const ATTACK = "u1\u001b]0;pwned\u0007\u001b[2J\u009b31m\u009d0;t\u0007\u202e";
/** Bytes a terminal would act on; none may reach stdout or stderr raw. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these control characters are what the test looks for.
const RAW_CONTROL = /[\u001b\u0007\u009b\u009d\u202e]/;

const running = killedAfterEach();
afterAll(removeTempDirs);

/** Whether `value` holds `text` exactly, as a string anywhere inside. */
function holds(value: unknown, text: string): boolean {
  if (typeof value === "string") return value === text;
  return typeof value === "object" && value !== null && Object.values(value).some((inner) => holds(inner, text));
}

/** The attack is still all there to read: as escapes on a person's terminal, exactly in --json records. */
function shownWhole(flags: readonly string[], output: string): void {
  if (flags.includes("--json")) expect(lines(output).some((line) => line.startsWith("{") && holds(JSON.parse(line), ATTACK))).toBe(true);
  else expect(output).toContain("u1\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x9d0;t\\x07\\u202e");
}

async function stop(wh: WhProcess): Promise<{ stdout: string; stderr: string }> {
  wh.child.kill("SIGINT");
  const result = await wh.exited;
  expect(result.stderr).not.toMatch(STACK_TRACE);
  return result;
}

describe("text from senders on the terminal", () => {
  const target = closedAfterEach();

  it.each([[[]], [["--json"]]])("wh listen %j prints a userId and event holding escape sequences inert", async (flags) => {
    const wh = await startInProcess(["listen", "--port", "0", ...flags]);
    running(wh);
    const url = /listening on (\S+)/.exec(await wh.waitForStderr((text) => text.includes("listening on ")))?.[1] as string;
    const body = JSON.stringify({ type: "track", userId: ATTACK, event: `Order${ATTACK}`, messageId: ATTACK });
    expect((await post(url.replace(/\/$/, ""), "/hook", body)).status).toBe(200);
    await wh.waitForStdout((text) => lines(text).length >= (flags.length === 0 ? 1 : 2));
    const { stdout, stderr } = await stop(wh);
    shownWhole(flags, stdout);
    expect(stdout).not.toMatch(RAW_CONTROL);
    expect(stderr).not.toMatch(RAW_CONTROL);
  });

  it.each([[[]], [["--json"]]])("wh serve %j prints a messageId and userId holding escape sequences inert", async (flags) => {
    const hook = await target();
    const wh = inProcess([...flags, "serve", "--port", "0", "--url", hook.url, "--verbose"], { cwd: await makeTempDir(), env: { WH_SHARED_SECRET: SECRET } });
    running(wh);
    const url = /tracking API on (\S+)/.exec(await wh.waitForStderr((text) => text.includes("tracking API on ")))?.[1] as string;
    const sent = await post(url, "/v1/track", JSON.stringify({ writeKey: "wk", userId: ATTACK, event: "E", messageId: ATTACK }));
    expect(sent.status).toBe(200);
    // An invalid event is dropped alone (the request answered 200) and reported: the report quotes its messageId.
    const rejected = await post(url, "/v1/track", JSON.stringify({ writeKey: "wk", userId: ATTACK, messageId: ATTACK }));
    expect(rejected.status).toBe(200);
    await wh.waitForStderr((text) => text.includes("rejected"));
    await eventually(() => hook.requests.length === 1, "the delivery");
    await wh.waitForStderr((text) => text.includes("delivered") || text.includes("attempt 1:"));
    const { stdout, stderr } = await stop(wh);
    shownWhole(flags, `${stdout}${stderr}`);
    expect(stdout).not.toMatch(RAW_CONTROL);
    expect(stderr).not.toMatch(RAW_CONTROL);
  });
});
