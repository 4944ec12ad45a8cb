import { execFileSync } from "node:child_process";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { shardOfLine } from "../../../src/core/shard.js";
import { closedAfterEach, type RecordedRequest } from "../../helpers/recording-server.js";
import { mountTmpfs } from "../../helpers/tmpfs.js";
import { countByMessageId, manyEvents, messageIdOf, readNdjson, runSigned, spawnSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, spawnWh, type WhProcess } from "../../helpers/run-wh.js";

// wh replay --workers N: worker threads run the bundled CLI, so these run wh spawned (npm run build first).

const server = closedAfterEach();
afterAll(removeTempDirs);

/** `count` events of `users` users, with invalid lines at `invalidAt` (0-based places in the file). */
async function eventsFile(count: number, users: number, invalidAt: number[] = []): Promise<{ dir: string; events: ReturnType<typeof manyEvents> }> {
  const dir = await makeTempDir();
  const events = manyEvents(count, users);
  const lines = events.map((event) => event.line);
  for (const at of invalidAt) lines.splice(at, 0, `not json ${at}`);
  await writeFile(join(dir, "events.ndjson"), `${lines.join("\n")}\n`);
  return { dir, events };
}

/** Each user's events, in the order they first arrived, are in file order (their messageIds ascend). */
function expectFirstArrivalsInOrder(requests: readonly RecordedRequest[], events: ReturnType<typeof manyEvents>): void {
  const userOf = new Map(events.map((event) => [event.messageId, event.userId]));
  const seen = new Set<string>();
  const order = new Map<string, string[]>();
  for (const request of requests) {
    const id = messageIdOf(request);
    if (seen.has(id)) continue;
    seen.add(id);
    const user = userOf.get(id) as string;
    order.set(user, [...(order.get(user) ?? []), id]);
  }
  for (const [user, ids] of order) expect(ids, user).toEqual([...ids].sort());
}

describe("wh replay --workers", () => {
  for (const workers of [2, 3]) {
    it(`--workers ${workers} delivers every event once, each user's in file order, with one journal and one dead-letter file`, async () => {
      const { dir, events } = await eventsFile(3_000, 41, [10, 1_500, 2_999]);
      const receiver = await server({ replies: () => ({ status: 200, delayMs: Math.floor(Math.random() * 3) }) });

      const result = await runSigned(
        ["replay", "events.ndjson", "--url", receiver.url, "--workers", String(workers), "--concurrency", "12"],
        { cwd: dir },
        spawnWh,
      );

      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toMatch(/^3000 delivered, 0 skipped by integrations, 3 invalid, 0 failed in /m);
      const counts = countByMessageId(receiver.requests);
      expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId).sort());
      expect([...counts.values()].every((count) => count === 1)).toBe(true);
      expectFirstArrivalsInOrder(receiver.requests, events);
      const deadLetters = (await readNdjson(join(dir, "events.ndjson.failed.ndjson"))).map((record) => Number(record.line));
      expect(deadLetters.sort((a, b) => a - b)).toEqual([11, 1501, 3000]);
      const journal = (await readFile(join(dir, "events.ndjson.wh-journal"), "utf8")).split("\n");
      expect(JSON.parse(journal[1] as string)).toMatchObject({ complete: true, lines: 3003, counts: { delivered: 3000, invalid: 3 } });
      // Nothing of each worker's own: the run's files are the main thread's.
      const written = (await readdir(dir)).filter((name) => name.startsWith("events.ndjson."));
      expect(written.sort()).toEqual(["events.ndjson.failed.ndjson", "events.ndjson.wh-journal"]);
    });
  }

  it("after kill -9 of wh midway, its workers die with it, and --resume sends again no more than was in flight", async () => {
    const { dir, events } = await eventsFile(4_000, 37);
    let running: WhProcess | undefined;
    let requestsAtKill: number | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 1_500) {
          running?.child.kill("SIGKILL");
          requestsAtKill = index + 1;
        }
        return { status: 200, delayMs: Math.floor(Math.random() * 3) };
      },
    });
    const args = ["replay", "events.ndjson", "--url", receiver.url, "--workers", "2", "--concurrency", "8"];

    running = spawnSigned(args, { cwd: dir }, spawnWh);
    const killed = await running.exited;
    expect(killed.signal).toBe("SIGKILL");
    // No worker outlived the process: nothing more arrives (at most what was on the wire already).
    const afterKill = receiver.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.requests.length).toBe(afterKill);
    expect(afterKill - (requestsAtKill ?? 0)).toBeLessThanOrEqual(8);

    const resumed = await runSigned([...args, "--resume"], { cwd: dir }, spawnWh);

    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/the whole run: 4000 delivered/);
    const counts = countByMessageId(receiver.requests);
    expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId).sort());
    // What one worker would send again: the deliveries in flight at the kill, at most --concurrency.
    expect([...counts.values()].filter((count) => count > 1).length).toBeLessThanOrEqual(8);
    expectFirstArrivalsInOrder(receiver.requests, events);
  });

  it("--shard i/n with --workers splits the shard's users among the workers: the shards together deliver every event once", async () => {
    const { dir, events } = await eventsFile(1_500, 29);
    const receiver = await server();

    const runs = await Promise.all(
      [0, 1].map((index) => runSigned(["replay", "events.ndjson", "--url", receiver.url, "--shard", `${index}/2`, "--workers", "2"], { cwd: dir }, spawnWh)),
    );

    for (const result of runs) expect(result.code, result.stderr).toBe(0);
    const counts = countByMessageId(receiver.requests);
    expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId).sort());
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    const shard0 = events.filter((event, index) => shardOfLine(event.line, index + 1, 2) === 0).length;
    expect(runs[0]?.stdout).toMatch(new RegExp(`^${shard0} delivered`, "m"));
    expectFirstArrivalsInOrder(receiver.requests, events);
  });

  it("--json gives one record per event from every worker, and a summary adding them up", async () => {
    const { dir } = await eventsFile(400, 9, [5]);
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--workers", "3", "--json"], { cwd: dir }, spawnWh);

    expect(result.code, result.stderr).toBe(1);
    const records = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const perEvent = records.filter((record) => record.summary !== true);
    expect(perEvent.filter((record) => record.outcome === "delivered")).toHaveLength(400);
    expect(perEvent.filter((record) => record.outcome === "invalid").map((record) => record.line)).toEqual([6]);
    expect(records.at(-1)).toMatchObject({ summary: true, delivered: 400, invalid: 1, unfinished: 0 });
  });

  it("--max-failures: the first worker to reach it stops the run, and the others stop with it (exit 1, resumable)", async () => {
    const { dir } = await eventsFile(3_000, 50);
    const receiver = await server({ replies: () => 404 });

    const result = await runSigned(
      ["replay", "events.ndjson", "--url", `${receiver.url}/wrong`, "--workers", "2", "--concurrency", "8"],
      { cwd: dir },
      spawnWh,
    );

    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /stopped after 100 identical failures in a row \(http:\/\/\S+\/wrong → HTTP 404\): the rest was not sent; check the URL's path/,
    );
    // The stopping worker's 100, the other's own few, and what was in flight: far from the 3,000.
    expect(receiver.requests.length).toBeLessThan(300);
    const failed = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(failed).toHaveLength(receiver.requests.length);
    const journal = (await readFile(join(dir, "events.ndjson.wh-journal"), "utf8")).trim().split("\n");
    // Unfinished: each failed line journaled, nothing else.
    expect(journal).toHaveLength(1 + failed.length);
  });

  it("runs one worker by default, whatever the file's size or the cores (two were slower than one on 2 cores shared with the receiver, bench/replay-workers.js)", async () => {
    const large = await eventsFile(8_000, 97);
    const receiver = await server();
    expect((await stat(join(large.dir, "events.ndjson"))).size).toBeGreaterThan(1024 * 1024);
    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--json"], { cwd: large.dir }, spawnWh);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout.trim().split("\n").at(-1) as string) as { workers: unknown }).workers).toBe(1);
  });

  it("--workers auto runs one worker per core, never more than --concurrency, and every event once", async () => {
    const { dir, events } = await eventsFile(300, 30);
    const receiver = await server();
    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--workers", "auto", "--json"], { cwd: dir }, spawnWh);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout.trim().split("\n").at(-1) as string) as { workers: unknown }).workers).toBe(Math.min(availableParallelism(), 64));
    expect([...countByMessageId(receiver.requests).values()].every((count) => count === 1)).toBe(true);
    expect(countByMessageId(receiver.requests).size).toBe(events.length);
    const capped = await runSigned(
      ["replay", "events.ndjson", "--url", receiver.url, "--workers", "auto", "--concurrency", "1", "--json"],
      { cwd: dir },
      spawnWh,
    );
    expect(capped.code, capped.stderr).toBe(0);
    expect((JSON.parse(capped.stdout.trim().split("\n").at(-1) as string) as { workers: unknown }).workers).toBe(1);
  });

  it.each([["--dry-run"], ["--verbose"], ["--rate", "100"]])("--workers auto with %s runs on one worker", async (...flag) => {
    const { dir } = await eventsFile(5, 2);
    const receiver = await server();
    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--workers", "auto", "--json", ...flag], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout.trim().split("\n").at(-1) as string) as { workers: unknown }).workers).toBe(1);
  });

  it("with the journal's disk full after dead letters were written: the journal and the dead letters agree (exit 74), and --resume dead-letters each failed line once", async (context) => {
    // Two pages of tmpfs, one the journal's lock's: its header and about 150 records fit.
    const disk = mountTmpfs(8 * 1024);
    if (typeof disk === "string") return context.skip(disk);
    try {
      const { dir, events } = await eventsFile(600, 20);
      const refusing = await server({ replies: [400] });
      const deadLetter = join(dir, "failed.ndjson");
      const args = [
        "replay",
        "events.ndjson",
        "--url",
        refusing.url,
        "--workers",
        "2",
        "--max-failures",
        "0",
        "--journal",
        join(disk.dir, "events.wh-journal"),
      ];

      const first = await runSigned([...args, "--dead-letter", deadLetter], { cwd: dir }, spawnWh);

      expect(first.code, first.stderr).toBe(74);
      expect(first.stderr).toMatch(/could not write --journal .*: no space left on device/);
      const journaled = (await readFile(join(disk.dir, "events.wh-journal"), "utf8")).trim().split("\n").slice(1);
      const lettered = (await readNdjson(deadLetter)).map((record) => Number(record.line));
      expect(lettered.length).toBeGreaterThan(0);
      // A line has its dead letter exactly when the journal records it finished.
      expect(lettered.sort((a, b) => a - b)).toEqual(journaled.map((record) => Number(record.split(" ")[0])).sort((a, b) => a - b));

      execFileSync("mount", ["-o", "remount,size=1m", disk.dir]);
      const resumed = await runSigned([...args, "--dead-letter", deadLetter, "--resume"], { cwd: dir }, spawnWh);
      expect(resumed.code, resumed.stderr).toBe(1);
      const lines = (await readNdjson(deadLetter)).map((record) => Number(record.line));
      expect(lines.sort((a, b) => a - b)).toEqual(events.map((_, index) => index + 1));
    } finally {
      disk.unmount();
    }
  });

  it.each([["0"], ["-1"], ["abc"], ["257"], ["1.5"]])("refuses --workers %s with a usage error (exit 2), sending nothing", async (value) => {
    const { dir } = await eventsFile(5, 2);
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--workers", value], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--workers ${JSON.stringify(value)}: expected a whole number from 1 to 256, or auto (one per core)`);
    expect(receiver.requests).toHaveLength(0);
  });

  it.each([["--dry-run"], ["--verbose"], ["--rate", "100"]])("refuses --workers 2 with %s (one worker shows or paces the run)", async (...flag) => {
    const { dir } = await eventsFile(5, 2);
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--workers", "2", ...flag], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--workers 2 cannot go with ${flag[0]}`);
    expect(receiver.requests).toHaveLength(0);
  });
});
