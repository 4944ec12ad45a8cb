import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordedRequest, type RecordingServer, type RecordingServerOptions } from "../../helpers/recording-server.js";
import { inProcess, runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// wh ingest keeps replay's promises: dead letters per message, Ctrl-C within the grace period
// even while batches wait to retry, and --resume. In-process.

const WRITE_KEY = "wk_resume_S3cr3t";
const servers: RecordingServer[] = [];

async function server(options: RecordingServerOptions = {}): Promise<RecordingServer> {
  const started = await startRecordingServer(options);
  servers.push(started);
  return started;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((each) => each.close()));
});

afterAll(removeTempDirs);

const track = (i: number): string => JSON.stringify({ type: "track", userId: `u${i}`, event: "Line Sent", messageId: `m${i}`, properties: { line: i } });
const received = (receiver: RecordingServer): string[] =>
  receiver.requests.flatMap((request: RecordedRequest) =>
    (JSON.parse(request.body.toString("utf8")) as { batch: { messageId: string }[] }).batch.map((message) => message.messageId),
  );

async function input(count: number, extra: string[] = []): Promise<string> {
  const cwd = await makeTempDir();
  await writeFile(join(cwd, "events.ndjson"), `${[...Array.from({ length: count }, (_, index) => track(index + 1)), ...extra].join("\n")}\n`);
  return cwd;
}

const ingest = (receiver: RecordingServer, extra: string[] = []): string[] => [
  "ingest",
  "events.ndjson",
  "--endpoint",
  receiver.url.replace(/\/$/, ""),
  "--write-key",
  WRITE_KEY,
  "--flush-at",
  "10",
  ...extra,
];

describe("wh ingest: dead letters, Ctrl-C and --resume", () => {
  it("writes each message of a failed batch to the dead-letter file with its line number and the reason, and invalid lines too", async () => {
    const cwd = await input(3, ["not json"]);
    const receiver = await server({ replies: [{ status: 400, body: "bad batch" }] });

    const result = await runInProcess(ingest(receiver), { cwd });

    expect(result.code, result.stderr).toBe(1);
    const records = (await readFile(join(cwd, "events.ndjson.ingest-failed.ndjson"), "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { line: number; outcome: string; reason: string; original: string });
    expect(records.map((record) => [record.line, record.outcome]).sort()).toEqual([
      [1, "failed"],
      [2, "failed"],
      [3, "failed"],
      [4, "invalid"],
    ]);
    expect(records.find((record) => record.line === 2)).toMatchObject({ reason: expect.stringMatching(/HTTP 400/), original: track(2) });
    expect(`${result.stdout}${result.stderr}`).not.toContain(WRITE_KEY);
  });

  it("stops within the grace period on Ctrl-C while a batch waits to retry, and --resume sends what was not finished", async () => {
    const cwd = await input(25);
    let failing = true;
    const receiver = await server({ replies: () => (failing ? { status: 503, headers: { "Retry-After": "120" } } : 200) });
    const wh = inProcess(ingest(receiver), { cwd });
    await wh.waitForStderr((stderr) => /retrying in/.test(stderr));
    const stoppedAt = Date.now();
    wh.child.kill("SIGINT");

    const interrupted = await wh.exited;

    expect(interrupted.code, interrupted.stderr).toBe(130);
    // The grace period is 5 s; a batch waiting out Retry-After: 120 must not hold the exit.
    expect(Date.now() - stoppedAt).toBeLessThan(20_000);
    expect(interrupted.stderr).toMatch(
      /interrupted: resume with {2}wh ingest events\.ndjson --write-key '\*\*\*' --endpoint http:\/\/127\.0\.0\.1:\d+\/hook --flush-at 10 --resume {3}\(type the values shown as \*\*\* again\)/,
    );
    expect(interrupted.stderr).not.toContain(WRITE_KEY);
    failing = false;

    const resumed = await runInProcess(ingest(receiver, ["--resume"]), { cwd });

    expect(resumed.code, resumed.stderr).toBe(0);
    const delivered = new Set(received(receiver));
    for (let line = 1; line <= 25; line += 1) expect(delivered.has(`m${line}`)).toBe(true);
  });

  it("after an interrupted run, a --resume sends only the lines not finished, and a second --resume says it is complete", async () => {
    const cwd = await input(40);
    let wh: ReturnType<typeof inProcess> | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 1) wh?.child.kill("SIGINT");
        return { status: 200, delayMs: 50 };
      },
    });
    wh = inProcess(ingest(receiver, ["--flush-after", "50ms"]), { cwd });
    const first = await wh.exited;
    expect(first.code, first.stderr).toBe(130);
    const sentFirst = received(receiver);

    const resumed = await runInProcess(ingest(receiver, ["--resume", "--flush-after", "50ms"]), { cwd });
    expect(resumed.code, resumed.stderr).toBe(0);
    const sentSecond = received(receiver).slice(sentFirst.length);
    expect(new Set([...sentFirst, ...sentSecond]).size).toBe(40);
    for (const id of sentSecond) expect(sentFirst).not.toContain(id);

    const again = await runInProcess(ingest(receiver, ["--resume"]), { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/complete already: 40 delivered/);
    expect(received(receiver)).toHaveLength(sentFirst.length + sentSecond.length);
  });

  it("refuses --resume when the input changed, before sending anything", async () => {
    const cwd = await input(30);
    let wh: ReturnType<typeof inProcess> | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 0) wh?.child.kill("SIGINT");
        return { status: 200, delayMs: 30 };
      },
    });
    wh = inProcess(ingest(receiver), { cwd });
    expect((await wh.exited).code).toBe(130);
    const before = receiver.requests.length;
    await writeFile(join(cwd, "events.ndjson"), `${Array.from({ length: 30 }, (_, index) => track(index + 100)).join("\n")}\n`);

    const resumed = await runInProcess(ingest(receiver, ["--resume"]), { cwd });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/--resume: line 1 of events\.ndjson is not the line the journal recorded as finished/);
    expect(receiver.requests).toHaveLength(before);
  });
});
