import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mountTmpfs } from "../../helpers/tmpfs.js";
import { startInProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE, type WhProcess, killedAfterEach } from "../../helpers/run-wh.js";

const SECRET = "capture-secret";

// A real full disk: a 64 KB tmpfs (it takes root; see test/helpers/tmpfs.ts for the skip).
const mounted = mountTmpfs(64 * 1024);
const smallDisk = typeof mounted === "string" ? undefined : mounted.dir;

const running = killedAfterEach();
afterAll(async () => {
  if (typeof mounted !== "string") mounted.unmount();
  await removeTempDirs();
});

const body = (n: number): string => `{"version":1,"type":"track","userId":"u1","event":"E","messageId":"m-${n}","timestamp":"2026-11-22T10:00:00.000Z"}`;

async function post(url: string, text: string): Promise<number> {
  const response = await fetch(url, { method: "POST", body: text, headers: { "content-type": "application/json", "x-signature": hmacHex(SECRET, text) } });
  await response.arrayBuffer();
  return response.status;
}

async function listen(out: string, cwd: string): Promise<{ wh: WhProcess; url: string }> {
  const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET, "--out", out, "--json"], { cwd });
  running(wh);
  const url = (JSON.parse(lines(await wh.waitForStdout((text) => text.includes("\n")))[0] as string) as { listening: string }).listening;
  return { wh, url };
}

/** The request records wh listen has printed (after its listening record). */
const records = (stdout: string): Record<string, unknown>[] =>
  lines(stdout)
    .slice(1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("wh listen --out when the capture cannot be written", () => {
  it.skipIf(smallDisk === undefined)("answers 503 while the disk is full, keeps listening, and captures again once there is space", async () => {
    const dir = join(smallDisk as string, "run");
    mkdirSync(dir);
    const out = join(dir, "captured.ndjson");
    const { wh, url } = await listen(out, await makeTempDir());
    const filler = join(dir, "filler");
    expect(() => writeFileSync(filler, Buffer.alloc(128 * 1024))).toThrow(/ENOSPC/);

    expect(await post(url, body(1))).toBe(503);
    await wh.waitForStdout((text) => lines(text).length >= 2);
    expect(records(wh.stdout())[0]).toMatchObject({ status: 503, captured: false, captureError: expect.stringContaining(`${out}: no space left on device`) });

    rmSync(filler);
    expect(await post(url, body(2))).toBe(200);
    await wh.waitForStdout((text) => lines(text).length >= 3);
    expect(records(wh.stdout())[1]).toMatchObject({ status: 200, captured: true });

    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    // Nothing torn, nothing answered 200 that is not there.
    expect(lines(readFileSync(out, "utf8")).map((line) => (JSON.parse(line) as { body: string }).body)).toEqual([body(2)]);
  });

  it("answers 503 and stops with exit 74 naming the file when the capture file was removed", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(out, cwd);
    expect(await post(url, body(1))).toBe(200);
    rmSync(out);

    expect(await post(url, body(2))).toBe(503);
    const result = await wh.exited;
    expect(result.code).toBe(74);
    expect(result.stderr).toContain(`wh: could not write --out ${out}: the file was removed or replaced while wh listened`);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(records(result.stdout)).toContainEqual(expect.objectContaining({ status: 503, captured: false }));
  });
});
