// In-process, but for the kill -9 test, which spawns bin/wh.cjs (dist/).
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordingServer } from "../../helpers/recording-server.js";
import { inProcess } from "../../helpers/in-process.js";
import { countByMessageId, exists, manyEvents, messageIdOf, runSigned, spawnSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, spawnWh, type Launch, type WhProcess } from "../../helpers/run-wh.js";

const CONCURRENCY = 8;
const EVENTS = 3_000;
const STOP_AFTER = 500;

const servers: RecordingServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

afterAll(removeTempDirs);

interface Setup {
  dir: string;
  server: RecordingServer;
  messageIds: string[];
  journal: string;
  /** Sends `signal` to the running replay as the receiver gets its STOP_AFTER-th request. */
  stopAt(signal: NodeJS.Signals): void;
  attach(replay: WhProcess): void;
}

/** A 3,000-event file over 40 users, and a receiver answering each request after ~2 ms. */
async function setUp(): Promise<Setup> {
  const dir = await makeTempDir();
  const events = manyEvents(EVENTS, 40);
  await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
  let running: WhProcess | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  const server = await startRecordingServer({
    replies: (_request, index) => {
      if (stopSignal !== undefined && index + 1 === STOP_AFTER) {
        running?.child.kill(stopSignal);
        stopSignal = undefined;
      }
      return { status: 200, delayMs: 2 };
    },
  });
  servers.push(server);
  return {
    dir,
    server,
    messageIds: events.map((event) => event.messageId),
    journal: join(dir, "events.ndjson.wh-journal"),
    stopAt: (signal) => {
      stopSignal = signal;
    },
    attach: (replay) => {
      running = replay;
    },
  };
}

/** Replays the setup's file: in-process, unless `launch` is spawnWh (for kill -9). */
function replay(setup: Setup, extra: string[] = [], launch: Launch = inProcess): WhProcess {
  const spawned = spawnSigned(
    ["replay", "events.ndjson", "--url", setup.server.url, "--concurrency", String(CONCURRENCY), ...extra],
    { cwd: setup.dir },
    launch,
  );
  setup.attach(spawned);
  return spawned;
}

/** Every event arrived at least once, and no more than `CONCURRENCY` of them more than once. */
function expectAllDeliveredWithFewDuplicates(setup: Setup): void {
  const counts = countByMessageId(setup.server.requests);
  expect([...counts.keys()].sort()).toEqual(setup.messageIds);
  const duplicates = [...counts.values()].filter((count) => count > 1).length;
  expect(duplicates).toBeLessThanOrEqual(CONCURRENCY);
}

/** Whether the journal records a run that ended (its second line is the completion record). */
async function journalIsComplete(path: string): Promise<boolean> {
  const lines = (await readFile(path, "utf8")).split("\n");
  return lines.length === 3 && (JSON.parse(lines[1] as string) as { complete?: unknown }).complete === true;
}

describe("wh replay: kill -9, Ctrl-C and --resume", () => {
  it("after kill -9 midway, resumes and delivers every event with no more duplicates than the concurrency", async () => {
    const setup = await setUp();
    setup.stopAt("SIGKILL");

    const killed = await replay(setup, [], spawnWh).exited;

    expect(killed.signal).toBe("SIGKILL");
    expect(setup.server.requests.length).toBeGreaterThanOrEqual(STOP_AFTER);
    expect(setup.server.requests.length).toBeLessThan(EVENTS);
    expect(await exists(setup.journal)).toBe(true);

    const resumed = await replay(setup, ["--resume"]).exited;

    expect(resumed.code, resumed.stderr).toBe(0);
    expectAllDeliveredWithFewDuplicates(setup);
    expect(await journalIsComplete(setup.journal)).toBe(true);
  });

  it("on SIGINT exits 130, keeps the journal and says how to resume; --resume then completes", async () => {
    const setup = await setUp();
    setup.stopAt("SIGINT");

    const interrupted = await replay(setup).exited;

    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(`${interrupted.stdout}\n${interrupted.stderr}`).toContain("--resume");
    expect(await exists(setup.journal)).toBe(true);
    expect(setup.server.requests.length).toBeLessThan(EVENTS);

    const resumed = await replay(setup, ["--resume"]).exited;

    expect(resumed.code, resumed.stderr).toBe(0);
    expectAllDeliveredWithFewDuplicates(setup);
    expect(await journalIsComplete(setup.journal)).toBe(true);
  });

  it("starts from the top without --resume, even when a journal was left by an interrupted run", async () => {
    const setup = await setUp();
    setup.stopAt("SIGINT");

    const interrupted = await replay(setup).exited;

    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(await exists(setup.journal)).toBe(true);
    const before = setup.server.requests.length;

    const again = await replay(setup).exited;

    expect(again.code, again.stderr).toBe(0);
    const second = setup.server.requests.slice(before).map(messageIdOf);
    expect(second.sort()).toEqual(setup.messageIds);
    expect(await journalIsComplete(setup.journal)).toBe(true);
  });

  it("on --resume after a complete run says it is complete and how it ended, sends nothing, and exits 0", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(20, 4);
    await writeFile(join(dir, "events.ndjson"), `${events.map((event) => event.line).join("\n")}\nnot json\n`);
    const server = await startRecordingServer();
    servers.push(server);

    const first = await runSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });
    expect(first.code, first.stderr).toBe(1);
    expect(await journalIsComplete(join(dir, "events.ndjson.wh-journal"))).toBe(true);

    const resumed = await runSigned(["replay", "events.ndjson", "--url", server.url, "--resume"], { cwd: dir });

    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/complete already: 20 delivered, 0 skipped by integrations, 1 invalid, 0 failed; nothing was sent/);
    expect(resumed.stdout).toMatch(/the run ended with exit 1 \(1 invalid, 0 failed\)/);
    expect(server.requests).toHaveLength(20);
  });

  it("on SIGINT stops reading standard input that is still open, and exits 130", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(3, 3);
    let spawned: WhProcess | undefined;
    const server = await startRecordingServer({
      replies: (_request, index) => {
        if (index + 1 === events.length) spawned?.child.kill("SIGINT");
        return 200;
      },
    });
    servers.push(server);
    spawned = spawnSigned(["replay", "-", "--url", server.url], { cwd: dir, keepStdinOpen: true, input: events.map((event) => `${event.line}\n`).join("") });
    // The producer never ends its output (like `tail -f`): only if wh has not stopped reading by
    // then does the test close stdin itself, so a broken wh cannot hang the suite.
    let stdinClosedByTest = false;
    const fallback = setTimeout(() => {
      stdinClosedByTest = true;
      spawned?.child.stdin.end();
    }, 120_000);

    const result = await spawned.exited;
    clearTimeout(fallback);

    expect(stdinClosedByTest, "wh kept waiting for standard input after SIGINT").toBe(false);
    expect(result.code, result.stderr).toBe(130);
    expect(server.requests.map(messageIdOf).sort()).toEqual(events.map((event) => event.messageId));
  });
});
