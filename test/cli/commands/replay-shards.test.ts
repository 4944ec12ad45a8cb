import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { shardOfLine } from "../../../src/core/shard.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { countByMessageId, manyEvents, messageIdOf, readNdjson, runSigned, spawnSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, type WhProcess } from "../../helpers/run-wh.js";

// --shard i/n: n processes together deliver every line once, each user's events in order.
// In-process (runMain against src/).

const server = closedAfterEach();
afterAll(removeTempDirs);

describe("wh replay --shard", () => {
  it("shards 0..3 of 4 at once deliver every event exactly once, in order per user, and report each invalid line once", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(2_000, 53);
    const lines = events.map((event) => event.line);
    // Invalid lines scattered through the file.
    for (const at of [10, 500, 1_001, 1_999]) lines.splice(at, 0, `not json ${at}`);
    await writeFile(join(dir, "events.ndjson"), `${lines.join("\n")}\n`);
    const receiver = await server({ replies: () => ({ status: 200, delayMs: Math.floor(Math.random() * 3) }) });

    const runs = await Promise.all(
      [0, 1, 2, 3].map((index) => runSigned(["replay", "events.ndjson", "--url", receiver.url, "--shard", `${index}/4`, "--concurrency", "8"], { cwd: dir })),
    );

    for (const result of runs) expect(result.code, result.stderr).toBe(1);
    const counts = countByMessageId(receiver.requests);
    expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId).sort());
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    const order = new Map<string, number[]>();
    for (const request of receiver.requests) {
      const event = events.find((each) => each.messageId === messageIdOf(request)) as { userId: string; messageId: string };
      order.set(event.userId, [...(order.get(event.userId) ?? []), Number(event.messageId.slice(2))]);
    }
    for (const [user, sequence] of order) expect(sequence, user).toEqual([...sequence].sort((a, b) => a - b));
    const reported = (
      await Promise.all([0, 1, 2, 3].map((index) => readNdjson(join(dir, `events.ndjson.shard-${index}-of-4.failed.ndjson`)).catch(() => [])))
    ).flat();
    expect(reported.map((record) => record.line).sort((a, b) => Number(a) - Number(b))).toEqual([11, 501, 1002, 2000]);
  });

  it("resumes one shard with its own journal", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(1_200, 17);
    await writeFile(join(dir, "events.ndjson"), `${events.map((event) => event.line).join("\n")}\n`);
    let running: WhProcess | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 60) running?.child.kill("SIGINT");
        return { status: 200, delayMs: 2 };
      },
    });
    running = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--shard", "1/3", "--concurrency", "4"], { cwd: dir });
    const first = await running.exited;
    expect(first.code, first.stderr).toBe(130);
    expect(first.stderr).toMatch(/resume with {2}wh replay events\.ndjson --url \S+ --concurrency 4 --shard 1\/3 --resume/);

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--shard", "1/3", "--resume"], { cwd: dir });

    expect(resumed.code, resumed.stderr).toBe(0);
    const mine = events.filter((event, index) => shardOfLine(event.line, index + 1, 3) === 1).map((event) => event.messageId);
    expect([...countByMessageId(receiver.requests).keys()].sort()).toEqual(mine.sort());
  });

  it("refuses a shard's --resume of another shard's complete journal when they share --journal, naming both shards, and sends nothing", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(60, 7);
    await writeFile(join(dir, "events.ndjson"), `${events.map((event) => event.line).join("\n")}\n`);
    const receiver = await server();
    const replay = (extra: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      runSigned(["replay", "events.ndjson", "--url", receiver.url, "--journal", "shared.wh-journal", ...extra], { cwd: dir });
    const first = await replay(["--shard", "0/2", "--resume"]);
    expect(first.code, first.stderr).toBe(0);
    const sent = receiver.requests.length;

    const other = await replay(["--shard", "1/2", "--resume"]);
    const whole = await replay(["--resume"]);

    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--resume: the journal \S+shared\.wh-journal records shard 0\/2 of \S+events\.ndjson, not shard 1\/2/);
    expect(whole.code).toBe(2);
    expect(whole.stderr).toMatch(/records shard 0\/2 of \S+events\.ndjson, not the whole input \(no --shard\)/);
    expect(receiver.requests).toHaveLength(sent);
  });

  it("refuses a shard that is not i/n with i < n", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), "{}\n");
    const result = await runSigned(["replay", "events.ndjson", "--url", "http://127.0.0.1:9/", "--shard", "4/4"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--shard "4\/4": expected i\/n with 0 <= i < n/);
  });
});
