import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { screenText, spawnWhInPty } from "../../helpers/pty.js";
import { killedAfterEach, lines, makeTempDir, removeTempDirs, spawnWh } from "../../helpers/run-wh.js";
import { SECRET, spawnSigned, trackLine } from "./replay-helpers.js";

afterAll(removeTempDirs);
const receiver = closedAfterEach();
const killed = killedAfterEach();

/**
 * A webhook that answers 503 asking for an hour's wait (Retry-After: 3600, so no retry comes by
 * itself during a test) until `heal()`; then 200. Three events of three users, in a file.
 */
async function downForAnHour() {
  let healed = false;
  const hook = await receiver({ replies: () => (healed ? 200 : { status: 503, headers: { "retry-after": "3600" } }) });
  const cwd = await makeTempDir();
  const file = join(cwd, "events.ndjson");
  await writeFile(file, `${["u1", "u2", "u3"].map((user, index) => trackLine(user, `m-${index + 1}`)).join("\n")}\n`);
  return { hook, cwd, file, heal: () => (healed = true) };
}

const count = (text: string, pattern: RegExp): number => text.match(new RegExp(pattern, "g"))?.length ?? 0;

describe("retry now", () => {
  it("SIGUSR1: a spawned replay whose deliveries wait an hour to retry sends them at once", async () => {
    const { hook, cwd, file, heal } = await downForAnHour();
    const wh = killed(spawnSigned(["replay", file, "--url", hook.url, "--verbose"], { cwd }, spawnWh));
    // Each response line is written in the step that starts its wait: three lines, three waits.
    await wh.waitForStderr((text) => count(text, /attempt 1: HTTP 503/) === 3);
    heal();
    wh.child.kill("SIGUSR1");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    const stderr = lines(result.stderr);
    const retried = stderr.indexOf("retrying 3 waiting deliveries now");
    expect(retried).toBeGreaterThan(-1);
    expect(stderr.findIndex((line) => line.includes("attempt 2: HTTP 200"))).toBeGreaterThan(retried);
    expect(result.stdout).toContain("3 delivered");
    expect(hook.requests).toHaveLength(6);
  });

  it("the r key on a terminal retries now, and the progress line says so", async () => {
    const { hook, cwd, file, heal } = await downForAnHour();
    const wh = killed(spawnWhInPty(["replay", file, "--url", hook.url], { cwd, env: { WH_SHARED_SECRET: SECRET } }));
    await wh.waitForStdout((text) => /3 waiting to retry.*Ctrl-C stops, resumable; r retries now/.test(screenText(text)));
    heal();
    wh.child.stdin.write("r");
    const result = await wh.exited;
    const screen = screenText(result.stdout);
    expect(screen).toContain("retrying 3 waiting deliveries now\n");
    expect(screen).toContain("3 delivered");
    expect(result.code).toBe(0);
  });

  it("Ctrl-C on a terminal that wh reads keys from still stops cleanly, resumably (exit 130)", async () => {
    const { hook, cwd, file } = await downForAnHour();
    const wh = killed(spawnWhInPty(["replay", file, "--url", hook.url], { cwd, env: { WH_SHARED_SECRET: SECRET } }));
    await wh.waitForStdout((text) => screenText(text).includes("r retries now"));
    wh.child.stdin.write("\u0003");
    const result = await wh.exited;
    expect(result.code).toBe(130);
    expect(screenText(result.stdout)).toMatch(/resume with {2}wh replay/);
  });

  it("a second Ctrl-C exits at once, and the terminal is no longer raw afterwards", async () => {
    const { hook, cwd, file } = await downForAnHour();
    const wh = killed(spawnWhInPty(["replay", file, "--url", hook.url], { cwd, env: { WH_SHARED_SECRET: SECRET }, afterwards: 'echo "exit $?"; stty -a' }));
    await wh.waitForStdout((text) => screenText(text).includes("r retries now"));
    wh.child.stdin.write("\u0003");
    wh.child.stdin.write("\u0003");
    const screen = screenText((await wh.exited).stdout);
    expect(screen).toContain("exit 130\n");
    // Cooked again: lines are read whole (icanon), Ctrl-C is a signal (isig), typing echoes.
    expect(screen).toMatch(/(^|\s)icanon(\s|$)/m);
    expect(screen).toMatch(/(^|\s)isig(\s|$)/m);
    expect(screen).toMatch(/(^|\s)echo(\s|$)/m);
  });
});

describe("retry now in-process (kill SIGUSR1 is io.retryNow.request())", () => {
  it("wh send: the waiting retry goes at once", async () => {
    const { hook, cwd, heal } = await downForAnHour();
    const wh = killed(spawnSigned(["send", "track", "--event", "Signed Up", "--user-id", "u1", "--url", hook.url], { cwd }));
    await wh.waitForStderr((text) => text.includes("retrying in 1h"));
    heal();
    wh.child.kill("SIGUSR1");
    const result = await wh.exited;
    expect(result.stderr).toContain("retrying 1 waiting delivery now");
    expect(result.stdout).toContain("delivered");
    expect(result.code).toBe(0);
  });

  it("wh audience sync: the waiting identifies go at once", async () => {
    const { hook, cwd, heal } = await downForAnHour();
    await writeFile(join(cwd, "members.txt"), "u1\nu2\n");
    const wh = killed(spawnSigned(["audience", "sync", "Buyers", "--members", "members.txt", "--url", hook.url], { cwd }));
    await wh.waitForStderr((text) => text.includes("2 waiting to retry"));
    heal();
    wh.child.kill("SIGUSR1");
    const result = await wh.exited;
    expect(result.stderr).toContain("retrying 2 waiting deliveries now");
    expect(result.code).toBe(0);
  });

  it("wh ingest: the batch waiting to retry goes at once", async () => {
    const { hook, cwd, file, heal } = await downForAnHour();
    const endpoint = hook.url.replace(/\/hook$/, "");
    const wh = killed(spawnSigned(["ingest", file, "--write-key", "wk", "--endpoint", endpoint], { cwd }));
    await wh.waitForStderr((text) => text.includes("attempt 1 failed, retrying in"));
    heal();
    wh.child.kill("SIGUSR1");
    const result = await wh.exited;
    expect(result.stderr).toContain("retrying 1 waiting delivery now");
    expect(result.stdout).toContain("3 sent in 1 batch");
    expect(result.code).toBe(0);
  });
});
