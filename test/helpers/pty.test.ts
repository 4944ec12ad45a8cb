import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDirs } from "./run-wh.js";
import { screenText, spawnWhInPty } from "./pty.js";

afterAll(removeTempDirs);

describe("spawnWhInPty", () => {
  it("runs wh on a terminal and gives back its exit code", async () => {
    const wh = spawnWhInPty(["sign", "--secret", "s", "--bogus"], { cwd: await makeTempDir() });
    const result = await wh.exited;
    expect(result.code).toBe(2);
    expect(screenText(result.stdout)).toContain("unknown option '--bogus'\n");
  });

  it("makes a typed Ctrl-C a SIGINT for wh", async () => {
    const wh = spawnWhInPty(["listen", "--port", "0"], { cwd: await makeTempDir() });
    await wh.waitForStdout((text) => /listening/i.test(text));
    wh.child.stdin.write("\u0003");
    const result = await wh.exited;
    expect(screenText(result.stdout)).toMatch(/stopped\n/);
    expect(result.code).toBe(0);
  });
});
