import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { tracked } from "../../helpers/children.js";
import { makeTempDir, removeTempDirs, ROOT } from "../../helpers/run-wh.js";

// Processes racing for one stale lock, released together: the lock file is what wh's
// acquireLock (from dist/: `npm run build` first) makes of it, in real processes.

afterAll(removeTempDirs);

const LOCK_MODULE = pathToFileURL(join(ROOT, "dist", "adapters", "lock-file.js")).href;

/**
 * Waits for the start file, takes the lock and prints "won", holding the lock until its standard
 * input ends (once every other contender has given up: under load a contender may try late, and
 * must find the lock still held); or prints why not.
 */
const CONTENDER = `
import { existsSync } from "node:fs";
const [lockModule, path, start] = process.argv.slice(1);
const { acquireLock } = await import(lockModule);
while (!existsSync(start)) {}
try {
  const lock = acquireLock(path, "the journal");
  process.stdout.write("won " + process.pid);
  process.stdin.on("end", () => lock.release()).resume();
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
  const children = Array.from({ length: count }, () => tracked(spawn(process.execPath, ["--input-type=module", "-e", CONTENDER, LOCK_MODULE, path, start])));
  let lost = 0;
  const outputs = children.map((child) => {
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    return new Promise<string>((resolve) =>
      child.on("close", () => {
        // Every loser has given up: the winner may let go.
        if (++lost === count - 1) for (const each of children) each.stdin.end();
        resolve(output);
      }),
    );
  });
  // Every contender is spinning on the start file by then.
  await new Promise((resolve) => setTimeout(resolve, 400));
  await writeFile(start, "");
  // Should no one take it (or no one lose), nobody waits for ever: well past how long the
  // contenders take to start and race on a busy machine, within the test's budget.
  const timer = setTimeout(() => {
    for (const child of children) child.stdin.end();
  }, 120_000);
  try {
    return await Promise.all(outputs);
  } finally {
    clearTimeout(timer);
  }
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
