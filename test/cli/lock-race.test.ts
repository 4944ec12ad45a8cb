import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDirs, ROOT } from "./run-wh.js";

// Processes racing for one stale lock, released together: the lock file is what wh's
// acquireLock (from dist/: `npm run build` first) makes of it, in real processes.

afterAll(removeTempDirs);

const LOCK_MODULE = pathToFileURL(join(ROOT, "dist", "adapters", "lock-file.js")).href;

/** Waits for the start file, takes the lock, holds it a while, and prints "won" or why not. */
const CONTENDER = `
import { existsSync } from "node:fs";
const [lockModule, path, start] = process.argv.slice(1);
const { acquireLock } = await import(lockModule);
while (!existsSync(start)) {}
try {
  const lock = acquireLock(path, "the journal");
  process.stdout.write("won " + process.pid);
  setTimeout(() => lock.release(), 300);
} catch (error) {
  process.stdout.write("lost " + error.message);
}`;

/** One round: a lock left by a process that is gone, and `count` contenders started at once. */
async function race(count: number): Promise<string[]> {
  const dir = await makeTempDir();
  const path = join(dir, "events.ndjson.wh-journal.lock");
  const gone = Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout);
  await writeFile(path, JSON.stringify({ pid: gone, host: hostname(), startedAt: "2026-11-22T00:00:00.000Z", token: "gone" }));
  const start = join(dir, "start");
  const outputs = Array.from({ length: count }, () => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", CONTENDER, LOCK_MODULE, path, start]);
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    return new Promise<string>((resolve) => child.on("close", () => resolve(output)));
  });
  // Every contender is spinning on the start file by then.
  await new Promise((resolve) => setTimeout(resolve, 400));
  await writeFile(start, "");
  return Promise.all(outputs);
}

describe("a stale lock raced for", () => {
  it.each([
    [2, 10],
    [5, 4],
  ])("%i processes at once, %i rounds: exactly one takes it, each other one says which process holds it", async (count, rounds) => {
    for (let round = 0; round < rounds; round += 1) {
      const outputs = await race(count);

      const winners = outputs.filter((output) => output.startsWith("won "));
      expect(winners, outputs.join("\n")).toHaveLength(1);
      const winner = (winners[0] as string).slice("won ".length);
      for (const output of outputs.filter((each) => !each.startsWith("won "))) {
        expect(output).toMatch(new RegExp(`^lost the journal is in use by another wh run: process ${winner} on `));
      }
    }
  });
});
