import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { manyEvents, messageIdOf, runSigned, spawnSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, spawnWh, type WhProcess } from "../../helpers/run-wh.js";

// Spawned (kill -9 is the process's): kill -9 at random points, several times, then --resume to
// the end: the receiver's record holds every event, and each user's events first arrived in file order.

const server = closedAfterEach();
afterAll(removeTempDirs);

const EVENTS = 4_000;
const KILLS = 5;

describe("wh replay under repeated kill -9", () => {
  it("delivers every event, in order per user, across five random kills and resumes", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(EVENTS, 37);
    await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
    let running: WhProcess | undefined;
    let killAt = Number.POSITIVE_INFINITY;
    const receiver = await server({
      replies: (_request, index) => {
        if (index + 1 >= killAt) {
          running?.child.kill("SIGKILL");
          killAt = Number.POSITIVE_INFINITY;
        }
        return { status: 200, delayMs: Math.floor(Math.random() * 3) };
      },
    });
    const args = ["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "16"];
    let kills = 0;
    for (let round = 0; round < KILLS; round += 1) {
      // A random point within the next stretch of the file.
      killAt = receiver.requests.length + 50 + Math.floor(Math.random() * 600);
      running = spawnSigned(round === 0 ? args : [...args, "--resume"], { cwd: dir }, spawnWh);
      const result = await running.exited;
      if (result.signal === "SIGKILL") kills += 1;
      else expect(result.code, result.stderr).toBe(0);
    }
    const last = await runSigned([...args, "--resume"], { cwd: dir }, spawnWh);
    expect(last.code, last.stderr).toBe(0);

    expect(kills).toBeGreaterThanOrEqual(3);
    const firstArrival = new Map<string, number>();
    receiver.requests.forEach((request, index) => {
      const id = messageIdOf(request);
      if (!firstArrival.has(id)) firstArrival.set(id, index);
    });
    expect([...firstArrival.keys()].sort()).toEqual(events.map((event) => event.messageId));
    const byUser = new Map<string, number[]>();
    for (const event of events) {
      const arrivals = byUser.get(event.userId) ?? [];
      arrivals.push(firstArrival.get(event.messageId) as number);
      byUser.set(event.userId, arrivals);
    }
    for (const [user, arrivals] of byUser) expect(arrivals, `user ${user}`).toEqual([...arrivals].sort((a, b) => a - b));
  });
});
