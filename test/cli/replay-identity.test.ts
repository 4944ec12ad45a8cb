import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordingServer } from "../helpers/recording-server.js";
import { manyEvents, messageIdOf, runSigned, SECRET, spawnSigned, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, type WhProcess } from "./run-wh.js";

// Resume only what was started, where it was started; one writer per journal.
// These tests spawn bin/wh.cjs (dist/): `npm run build` first.

const server = closedAfterEach();
afterAll(removeTempDirs);

const ndjson = (lines: readonly string[]): string => lines.map((line) => `${line}\n`).join("");

/** A replay of `count` events stopped by SIGINT once the receiver has its `stopAfter`-th request. */
async function interruptedReplay(count: number, stopAfter: number, extra: string[] = [], input?: string): Promise<{ dir: string; receiver: RecordingServer; lines: string[]; first: { code: number | null; stdout: string; stderr: string } }> {
  const dir = await makeTempDir();
  const lines = manyEvents(count, 7).map((event) => event.line);
  await writeFile(join(dir, "events.ndjson"), ndjson(lines));
  let running: WhProcess | undefined;
  const receiver = await server({
    replies: (_request, index) => {
      if (index + 1 === stopAfter) running?.child.kill("SIGINT");
      return { status: 200, delayMs: 5 };
    },
  });
  const file = input === undefined ? "events.ndjson" : "-";
  running = spawnSigned(["replay", file, "--url", receiver.url, "--concurrency", "4", ...extra], { cwd: dir, ...(input === undefined ? {} : { input }) });
  const first = await running.exited;
  expect(first.code, first.stderr).toBe(130);
  return { dir, receiver, lines, first };
}

describe("wh replay --resume checks the input line by line", () => {
  it("refuses a file regenerated in place with other events, naming the first differing line, and sends nothing", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40);
    const before = receiver.requests.length;
    await writeFile(join(dir, "events.ndjson"), ndjson(Array.from({ length: 200 }, (_, index) => trackLine(`other-${index % 7}`, `x-${index}`))));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/--resume: line 1 of events\.ndjson is not the line the journal recorded as finished: the input changed since the run began; nothing was sent/);
    expect(receiver.requests).toHaveLength(before);
  });

  it("refuses a file with lines inserted at its top", async () => {
    const { dir, receiver, lines } = await interruptedReplay(200, 40);
    const before = receiver.requests.length;
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("new", "new-1"), trackLine("new", "new-2"), ...lines]));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/line 1 of events\.ndjson is not the line/);
    expect(receiver.requests).toHaveLength(before);
  });

  it("refuses other data piped on stdin, and resumes the same data piped again", async () => {
    const events = manyEvents(200, 7).map((event) => event.line);
    const { dir, receiver } = await interruptedReplay(200, 40, [], ndjson(events));
    const before = receiver.requests.length;

    const other = await runSigned(["replay", "-", "--url", receiver.url, "--resume"], { cwd: dir, input: ndjson(events.map((line) => line.replace("Replayed", "Changed"))) });
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/line 1 of standard input is not the line the journal recorded as finished/);
    expect(receiver.requests).toHaveLength(before);

    const same = await runSigned(["replay", "-", "--url", receiver.url, "--resume"], { cwd: dir, input: ndjson(events) });
    expect(same.code, same.stderr).toBe(0);
    expect(new Set(receiver.requests.map(messageIdOf)).size).toBe(200);
  });

  it("refuses an input cut short before lines the journal records as finished", async () => {
    const { dir, receiver, lines } = await interruptedReplay(200, 60);
    await writeFile(join(dir, "events.ndjson"), ndjson(lines.slice(0, 3)));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/the journal records line \d+ of events\.ndjson as finished, but the input has 3 lines/);
  });
});

describe("wh replay --resume checks the destination", () => {
  it("prints a resume command that repeats --url and the flags given, shell-quoted, never the secret", async () => {
    const { first } = await interruptedReplay(200, 40, ["--header", "X-Tenant: acme corp", "--header", "Authorization: Bearer t0k3n", "--secret", SECRET]);

    expect(first.stderr).toMatch(/interrupted: resume with {2}wh replay events\.ndjson --url http:\/\/127\.0\.0\.1:\d+\/hook --header 'X-Tenant: acme corp' --header 'Authorization: \*\*\*' --concurrency 4 --resume {3}\(type the values shown as \*\*\* again; give the secret again \(WH_SHARED_SECRET or --secret-file\)\)/);
    expect(`${first.stdout}${first.stderr}`).not.toContain(SECRET);
    expect(`${first.stdout}${first.stderr}`).not.toContain("t0k3n");
  });

  it("refuses a resume that would deliver elsewhere (the config's URL instead of --url), naming the original destination", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40);
    const elsewhere = await server();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ webhooks: [{ url: elsewhere.url }] }));

    const resumed = await runSigned(["replay", "events.ndjson", "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain(`delivered to ${receiver.url}; this one would deliver to ${elsewhere.url}`);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("masks a URL password in the original destination it names", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40, [], undefined);
    const withPassword = receiver.url.replace("http://", "http://alice:hunter22@");

    const resumed = await runSigned(["replay", "events.ndjson", "--url", withPassword, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain("http://***:***@127.0.0.1");
    expect(resumed.stderr).not.toContain("hunter22");
  });
});

describe("one wh replay per journal", () => {
  it("refuses a second replay of the same file while the first runs, naming it; the first delivers every event once", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(300, 7);
    await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
    const receiver = await server({ replies: [{ status: 200, delayMs: 10 }] });
    const first = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"], { cwd: dir });
    while (receiver.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));

    const second = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });
    const done = await first.exited;

    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(new RegExp(`the journal .*events\\.ndjson\\.wh-journal is in use by another wh run: process ${first.child.pid} on `));
    expect(done.code, done.stderr).toBe(0);
    expect(receiver.requests.map(messageIdOf).sort()).toEqual(events.map((event) => event.messageId));
  });

  it("takes over the lock of a replay killed with kill -9", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1")]));
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    await writeFile(join(dir, "events.ndjson.wh-journal.lock"), JSON.stringify({ pid: Number(dead.stdout), host: hostname(), startedAt: "2026-11-22T00:00:00.000Z", token: "gone" }));
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });
});
