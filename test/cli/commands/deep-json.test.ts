import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE, killedAfterEach } from "../../helpers/run-wh.js";

const SECRET = "deep-secret";
/** 5,000 arrays inside each other: valid JSON that overflows the stack of a recursive walk. */
const DEEP = `${"[".repeat(5_000)}${"]".repeat(5_000)}`;
const DEEP_OBJECT = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;

const running = killedAfterEach();
afterAll(removeTempDirs);

async function post(url: string, body: string, signature?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...(signature === undefined ? {} : { "x-signature": signature }) },
  });
  return { status: response.status, text: await response.text() };
}

describe("JSON nested 5,000 deep", () => {
  it("wh listen refuses it with 400 (or 401 unsigned) naming the nesting, and goes on answering and capturing", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET, "--out", out, "--json"], { cwd });
    running(wh);
    const url = (JSON.parse(lines(await wh.waitForStdout((text) => text.includes("\n")))[0] as string) as { listening: string }).listening;
    const good = '{"version":1,"type":"track","userId":"u1","event":"E","messageId":"m-1","timestamp":"2026-11-22T10:00:00.000Z"}';

    for (const body of [DEEP, DEEP_OBJECT]) {
      expect((await post(url, body, hmacHex("another-secret", body))).status).toBe(401);
      const signed = await post(url, body, hmacHex(SECRET, body));
      expect(signed.status).toBe(400);
      expect(signed.text).toContain("nested deeper than 256 levels");
    }
    expect((await post(url, good, hmacHex(SECRET, good))).status).toBe(200);
    await wh.waitForStdout((text) => lines(text).length >= 6);
    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(lines(await readFile(out, "utf8")).map((line) => (JSON.parse(line) as { body: string }).body)).toEqual([good]);
  });

  it.each([[[]], [["--json"]]])("wh verify --explain %j says a mismatch (exit 1) or a match (exit 0), never crashes", async (flags) => {
    const cwd = await makeTempDir();
    for (const body of [DEEP, DEEP_OBJECT]) {
      await writeFile(join(cwd, "deep.json"), body);
      const mismatch = await runInProcess([...flags, "verify", "--explain", "--secret", SECRET, "--signature", hmacHex("another-secret", body), "deep.json"], {
        cwd,
      });
      expect(mismatch.code, mismatch.stderr).toBe(1);
      expect(mismatch.stdout).toContain("another secret");
      expect(mismatch.stderr).not.toMatch(STACK_TRACE);
      const match = await runInProcess([...flags, "verify", "--explain", "--secret", SECRET, "--signature", hmacHex(SECRET, body), "deep.json"], { cwd });
      expect(match.code, match.stderr).toBe(0);
    }
  });
});
