import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { screenText, spawnWhInPty } from "../../helpers/pty.js";
import { startRecordingServer } from "../../helpers/recording-server.js";
import { SECRET, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// Issue 27 item 6 on a real pseudo-terminal (bin/wh.cjs: run `npm run build` first): a person
// sends to a port nothing listens on, is told so at once, and Ctrl-C ends it at once.

afterAll(removeTempDirs);

const env = { WH_SHARED_SECRET: SECRET };
const REFUSED = /nothing is listening on 127\.0\.0\.1:(\d+) \(connection refused\): retrying until \d\d:\d\d:\d\d — Ctrl-C stops/;

async function closedPort(): Promise<number> {
  const closed = await startRecordingServer();
  await closed.close();
  return closed.port;
}

describe("wh send on a terminal to a port nothing listens on", () => {
  it("says so on the first refused attempt, with when it gives up, and exits 130 at once on Ctrl-C", async () => {
    const port = await closedPort();
    const args = ["send", "track", "--user-id", "u1", "--event", "E", "--message-id", "m-1", "--url", `http://127.0.0.1:${port}/hook`];
    const wh = spawnWhInPty(args, { cwd: await makeTempDir(), env, columns: 200 });
    const screen = screenText(await wh.waitForStdout((text) => REFUSED.test(screenText(text))));
    wh.child.stdin.write("\u0003");
    const result = await wh.exited;

    expect(screen.match(REFUSED)?.[1]).toBe(String(port));
    // The first attempt was refused: that alone is enough to say it.
    expect(screen).toMatch(/attempt 1: nothing is listening/);
    expect(result.code).toBe(130);
    expect(screenText(result.stdout)).toMatch(/✖ interrupted track m-1 before it was delivered \(\d+ attempts?\)/);
  });
});

describe("wh replay on a terminal while every event waits to retry", () => {
  it("shows lines read and finished apart, stops at once on Ctrl-C, and leaves the journal to resume", async () => {
    const port = await closedPort();
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n${trackLine("u2", "m2")}\n`);
    const wh = spawnWhInPty(["replay", "events.ndjson", "--url", `http://127.0.0.1:${port}/hook`], { cwd: dir, env, columns: 250 });
    const screen = screenText(await wh.waitForStdout((text) => /2 waiting to retry.*nothing is listening/.test(screenText(text))));
    wh.child.stdin.write("\u0003");
    const result = await wh.exited;

    expect(screen).toMatch(/read 100% · 0 of 2 finished · 0 delivered · 0 failed · 0 invalid · 2 waiting to retry/);
    expect(result.code).toBe(130);
    const shown = screenText(result.stdout);
    expect(shown).toMatch(/0 delivered, .* 2 not finished/);
    expect(shown).toMatch(/interrupted: resume with {2}wh replay events\.ndjson .*--resume/);
    // The journal names the input and records no line as finished.
    const journal = (await readFile(join(dir, "events.ndjson.wh-journal"), "utf8")).trim().split("\n");
    expect(journal).toHaveLength(1);
  });
});
