// --max-failures and the grouped failure lines (issue 27, item 1): a path that answers 404 to
// every event stops the run after the limit, resumable, instead of dead-lettering the whole file.
// In-process, against a real node:http server; the terminal case spawns wh on a pseudo-terminal.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type Reply } from "../../helpers/recording-server.js";
import { screenText, spawnWhInPty } from "../../helpers/pty.js";
import { virtualClock } from "../../helpers/virtual-clock.js";
import { countByMessageId, exists, manyEvents, messageIdOf, readNdjson, runSigned, SECRET } from "./replay-helpers.js";
import { lines, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult } from "../../helpers/run-wh.js";

const receiver = closedAfterEach();
afterAll(removeTempDirs);

/** Counts on one line a group's size: no progress lines in between, whatever the run's pace. */
const NO_PROGRESS = { timings: { progressEveryMs: 600_000 } };

function expectExit(result: RunResult, code: number): void {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(code);
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

/** A directory with events.ndjson holding `count` events over 10 users; their messageIds in file order. */
async function eventsFile(count: number): Promise<{ dir: string; messageIds: string[] }> {
  const dir = await makeTempDir();
  const events = manyEvents(count, 10);
  await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
  return { dir, messageIds: events.map((event) => event.messageId) };
}

describe("wh replay --max-failures", () => {
  it("stops after N identical failures in a row, resumable: a resume once the receiver is fixed delivers the rest, each event once", async () => {
    const { dir, messageIds } = await eventsFile(1_000);
    let fixed = false;
    const server = await receiver({ replies: () => (fixed ? 200 : 404) });
    const args = ["replay", "events.ndjson", "--url", server.url, "--concurrency", "4", "--max-failures", "20"];
    const stopped = await runSigned(args, { cwd: dir, ...NO_PROGRESS });
    expectExit(stopped, 1);
    const failedRequests = server.requests.length;
    // The limit, and what was in flight or read ahead when it was reached: never the whole file.
    expect(failedRequests).toBeGreaterThanOrEqual(20);
    expect(failedRequests).toBeLessThan(300);
    expect(stopped.stderr).toContain(`stopped after 20 identical failures in a row (${server.url} → HTTP 404): the rest was not sent`);
    // A 404 to every event is a path typo far more often than a receiver that is down: a resume
    // cannot change the URL, so the first way on is another --url without --resume.
    expect(stopped.stderr).toContain(
      "the rest was not sent; check the URL's path: with the right --url, run again without --resume (a resume delivers to the same URLs); if this path is right and will answer, resume with  wh replay events.ndjson",
    );
    expect(stopped.stderr).not.toContain("once the receiver answers");
    expect(stopped.stderr).toMatch(/resume with {2}wh replay events\.ndjson --url \S+ --concurrency 4 --max-failures 20 --resume/);
    expect(stopped.stderr).not.toContain(SECRET);
    // One line for the first failure, one count line: not a line per event.
    expect(lines(stopped.stderr).filter((line) => !line.startsWith("stopped after"))).toEqual([
      `line 1: failed: ${server.url} → HTTP 404`,
      expect.stringMatching(new RegExp(`^✗ ${failedRequests} lines failed the same way \\(lines 1–\\d+\\)$`)),
    ]);
    expect(await exists(join(dir, "events.ndjson.wh-journal"))).toBe(true);
    const deadLetters = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(deadLetters).toHaveLength(failedRequests);

    fixed = true;
    const resumed = await runSigned([...args, "--resume"], { cwd: dir, ...NO_PROGRESS });
    // The whole run's exit code counts the failures of its first part.
    expectExit(resumed, 1);
    expect(resumed.stdout).toContain(`the whole run: ${1_000 - failedRequests} delivered`);
    const delivered = countByMessageId(server.requests.slice(failedRequests));
    expect([...delivered.values()].every((count) => count === 1)).toBe(true);
    const deadIds = deadLetters.map((record) => String((JSON.parse(String(record.original)) as { messageId: string }).messageId));
    // Nothing lost, nothing twice: each event was delivered by the resume or is a dead letter, never both.
    expect([...delivered.keys(), ...deadIds].sort()).toEqual(messageIds);
    // As the stop said: replaying the dead-letter file sends the failed ones, and then every event has arrived once.
    expect(stopped.stderr).toContain("then wh replay events.ndjson.failed.ndjson with the same --url sends the failed ones");
    const redriven = await runSigned(["replay", "events.ndjson.failed.ndjson", "--url", server.url], { cwd: dir, ...NO_PROGRESS });
    expectExit(redriven, 0);
    const everyDelivery = countByMessageId(server.requests.slice(failedRequests));
    expect([...everyDelivery.keys()].sort()).toEqual(messageIds);
    expect([...everyDelivery.values()].every((count) => count === 1)).toBe(true);
  });

  it("groups identical failures into one counted line and never stops with --max-failures 0", async () => {
    const { dir } = await eventsFile(300);
    const server = await receiver({ replies: [404] });
    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--max-failures", "0"], { cwd: dir, ...NO_PROGRESS });
    expectExit(result, 1);
    expect(server.requests).toHaveLength(300);
    expect(result.stdout).toContain("0 delivered");
    expect(result.stdout).toContain("300 failed");
    expect(result.stderr).not.toContain("stopped after");
    expect(lines(result.stderr)).toEqual([`line 1: failed: ${server.url} → HTTP 404`, "✗ 300 lines failed the same way (lines 1–300)"]);
  });

  it("keeps one --json record per event, while stderr counts them", async () => {
    const { dir } = await eventsFile(50);
    const server = await receiver({ replies: [404] });
    const result = await runSigned(["--json", "replay", "events.ndjson", "--url", server.url], { cwd: dir, ...NO_PROGRESS });
    expectExit(result, 1);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((record) => record.outcome === "failed")).toHaveLength(50);
    expect(records.at(-1)).toMatchObject({ summary: true, failed: 50, stoppedByFailures: null });
    expect(lines(result.stderr)).toHaveLength(2);
  });

  it("counts only identical failures in a row: a different failure or a delivered event starts again", async () => {
    const { dir } = await eventsFile(60);
    // One request at a time, in file order: 404, 404, 403, 403, 200, again and again.
    const pattern: Reply[] = [404, 404, 403, 403, 200];
    const server = await receiver({ replies: (_request, index) => pattern[index % pattern.length] ?? 200 });
    const args = ["replay", "events.ndjson", "--url", server.url, "--concurrency", "1"];
    const result = await runSigned([...args, "--max-failures", "3"], { cwd: dir, ...NO_PROGRESS });
    expectExit(result, 1);
    expect(server.requests).toHaveLength(60);
    expect(result.stderr).not.toContain("stopped after");
    expect(result.stdout).toContain("12 delivered");
    // Each change of answer starts a group of its own: a line for its first failure, a count for the second.
    expect(lines(result.stderr).filter((line) => line.startsWith("✗ 2 lines failed the same way"))).toHaveLength(24);

    const stopping = await runSigned([...args, "--max-failures", "2", "--journal", "again.wh-journal"], { cwd: dir, ...NO_PROGRESS });
    expectExit(stopping, 1);
    expect(stopping.stderr).toContain(`stopped after 2 identical failures in a row (${server.url} → HTTP 404)`);
    expect(server.requests.length - 60).toBeLessThan(10);
  });

  it("counts a 5xx only once its retries are over: final failures, not attempts", async () => {
    const { dir } = await eventsFile(100);
    const server = await receiver({ replies: [503] });
    const args = ["replay", "events.ndjson", "--url", server.url, "--concurrency", "1", "--max-attempts", "3", "--max-failures", "4"];
    const result = await runSigned(args, { cwd: dir, clock: virtualClock("2026-11-21T09:30:00.000Z"), ...NO_PROGRESS });
    expectExit(result, 1);
    expect(result.stderr).toContain(`stopped after 4 identical failures in a row (${server.url} → HTTP 503 (gave up after 3 attempts))`);
    // A receiver that is down is waited for, then resumed: its path is not in question.
    expect(result.stderr).toContain("the rest was not sent; once the receiver answers, resume with  wh replay events.ndjson");
    expect(result.stderr).not.toContain("check the URL's path");
    // Four events, three attempts each; the fifth was read ahead and never started.
    expect(server.requests).toHaveLength(12);
    expect(new Set(server.requests.map(messageIdOf)).size).toBe(4);
  });

  it("groups identical invalid lines and stops after N in a row (a renamed key), sending nothing; --json keeps a record per line", async () => {
    const dir = await makeTempDir();
    // Every line's "type" renamed "kind": each is invalid the same way.
    const renamed = manyEvents(300, 10).map((event) => event.line.replace('"type":', '"kind":'));
    await writeFile(join(dir, "events.ndjson"), renamed.map((line) => `${line}\n`).join(""));
    const server = await receiver();
    const args = ["replay", "events.ndjson", "--url", server.url, "--max-failures", "20"];
    const result = await runSigned(args, { cwd: dir, ...NO_PROGRESS });
    expectExit(result, 1);
    expect(server.requests).toHaveLength(0);
    const reason = "type: missing type (one of identify, track, page, screen, group, alias, delete)";
    expect(lines(result.stderr)).toEqual([
      `line 1: invalid: ${reason}`,
      "✗ 20 lines were invalid the same way (lines 1–20)",
      `stopped after 20 identical invalid lines in a row (from line 1: ${reason}): the rest was not read; fix the input and run it again without --resume (the invalid lines are in events.ndjson.failed.ndjson)`,
    ]);
    expect(result.stdout).toContain("0 delivered, 0 skipped by integrations, 20 invalid, 0 failed");
    expect(await readNdjson(join(dir, "events.ndjson.failed.ndjson"))).toHaveLength(20);

    const json = await runSigned(["--json", ...args, "--journal", "again.wh-journal"], { cwd: dir, ...NO_PROGRESS });
    expectExit(json, 1);
    const records = lines(json.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((record) => record.outcome === "invalid").map((record) => record.line)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(records.at(-1)).toMatchObject({
      summary: true,
      invalid: 20,
      stoppedByFailures: { outcome: "invalid", failures: 20, reason, firstLine: 1, wrongPath: false },
    });
  });

  it("counts invalid lines in the input's order: valid lines between them, though delivered later, keep a run going", async () => {
    const dir = await makeTempDir();
    // Every other line lacks its event name; the others are delivered.
    const mixed = manyEvents(400, 10).map((event, index) => (index % 2 === 0 ? event.line : event.line.replace(/"event":"[^"]*",/, "")));
    await writeFile(join(dir, "events.ndjson"), mixed.map((line) => `${line}\n`).join(""));
    const server = await receiver({ replies: [{ status: 200, delayMs: 2 }] });
    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--max-failures", "5"], { cwd: dir, ...NO_PROGRESS });
    expectExit(result, 1);
    expect(server.requests).toHaveLength(200);
    expect(result.stderr).not.toContain("stopped after");
    expect(result.stdout).toContain("200 delivered, 0 skipped by integrations, 200 invalid, 0 failed");
    // A delivered event does not end the group: one line for the first, one count.
    expect(lines(result.stderr)).toEqual(["line 2: invalid: You must pass 'event'.", "✗ 200 lines were invalid the same way (lines 2–400)"]);
  });

  it.each(["-1", "many", "1.5", ""])("refuses --max-failures %j with exit 2, sending nothing", async (value) => {
    const { dir } = await eventsFile(3);
    const server = await receiver();
    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--max-failures", value], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toContain(`--max-failures ${JSON.stringify(value)}: expected a whole number from 0 to 1000000000`);
    expect(server.requests).toHaveLength(0);
  });
});

describe("--max-failures beyond replay", () => {
  it("stops an audience sync, which records only what was delivered", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "members.txt"), Array.from({ length: 200 }, (_, index) => `u${index}\n`).join(""));
    const server = await receiver({ replies: [404] });
    const result = await runSigned(["audience", "sync", "VIP", "--members", "members.txt", "--url", server.url, "--max-failures", "5", "--concurrency", "2"], {
      cwd: dir,
      ...NO_PROGRESS,
    });
    expectExit(result, 1);
    expect(server.requests.length).toBeLessThan(50);
    expect(result.stderr).toContain("stopped after 5 identical failures in a row");
    expect(result.stderr).toContain("check the URL's path, then run the sync again with the right --url");
    expect(result.stdout).toContain("what was not delivered is sent again by the next sync");
  });

  it("stops an ingest, resumable", async () => {
    const { dir } = await eventsFile(400);
    const server = await receiver({ replies: [404] });
    const result = await runSigned(
      ["ingest", "events.ndjson", "--endpoint", server.url, "--write-key", "wk_test", "--flush-at", "10", "--max-failures", "20"],
      { cwd: dir, ...NO_PROGRESS },
    );
    expectExit(result, 1);
    expect(server.requests.length).toBeLessThan(40);
    expect(result.stderr).toMatch(/stopped after 20 identical failures in a row \(\S+\/v1\/batch → HTTP 404\)/);
    expect(result.stderr).toContain("--max-failures 20 --resume");
    expect(result.stderr).toContain("check --endpoint (wh posts to its /v1/batch): with the right one, run again without --resume");
    expect(result.stderr).not.toContain("wk_test");
    expect(await exists(join(dir, "events.ndjson.wh-ingest-journal"))).toBe(true);
  });
});

describe("grouped failures on a terminal", () => {
  it("rewrites the count line in place", async () => {
    const { dir } = await eventsFile(150);
    // Slow enough that the count is shown while the group grows, then rewritten.
    const server = await receiver({ replies: [{ status: 404, delayMs: 3 }] });
    const wh = spawnWhInPty(["replay", "events.ndjson", "--url", server.url, "--concurrency", "1", "--max-failures", "0"], {
      cwd: dir,
      env: { WH_SHARED_SECRET: SECRET },
    });
    const result = await wh.exited;
    expect(result.code).toBe(1);
    // Up a row, to its start, the row cleared: the count line written over itself.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's escape sequences are what this looks for.
    expect(result.stdout).toMatch(/\u001b\[1A\r\u001b\[2K[^\n]*✗ \d+ lines failed the same way/);
    const screen = screenText(result.stdout);
    expect(screen).toContain(`line 1: failed: ${server.url} → HTTP 404`);
    expect(screen).toContain("✗ 150 lines failed the same way (lines 1–150)");
    expect(screen.match(/line \d+: failed/g)).toHaveLength(1);
  });
});
