import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordedRequest, type RecordingServer, type RecordingServerOptions } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { lines, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult } from "../../helpers/run-wh.js";

// In-process (runMain against src/).

const WRITE_KEY = "wk_cli_S3cr3tKey77";
const BASIC = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;

let servers: RecordingServer[] = [];

async function server(options: RecordingServerOptions = {}): Promise<RecordingServer> {
  const started = await startRecordingServer(options);
  servers.push(started);
  return started;
}

const endpointOf = (receiver: RecordingServer): string => `http://127.0.0.1:${receiver.port}`;

afterEach(async () => {
  const running = servers;
  servers = [];
  await Promise.all(running.map((receiver) => receiver.close()));
});

afterAll(async () => {
  await removeTempDirs();
});

interface Batch {
  batch: Array<Record<string, unknown>>;
  sentAt: string;
}

const parse = (request: RecordedRequest): Batch => JSON.parse(request.body.toString("utf8")) as Batch;
const received = (receiver: RecordingServer): Array<Record<string, unknown>> => receiver.requests.flatMap((request) => parse(request).batch);
const batchSizes = (receiver: RecordingServer): number[] => receiver.requests.map((request) => parse(request).batch.length).sort((a, b) => b - a);

function track(i: number): string {
  return JSON.stringify({ type: "track", userId: `u${i}`, event: "Line Sent", properties: { line: i } });
}

/** A temp directory with `events.ndjson` holding these lines. */
async function ndjson(fileLines: string[]): Promise<{ cwd: string; file: string }> {
  const cwd = await makeTempDir();
  const file = join(cwd, "events.ndjson");
  await writeFile(file, `${fileLines.join("\n")}\n`);
  return { cwd, file };
}

function expectNoWriteKey(result: RunResult): void {
  expect(result.stdout).not.toContain(WRITE_KEY);
  expect(result.stderr).not.toContain(WRITE_KEY);
  expect(result.stdout).not.toContain(BASIC.slice("Basic ".length));
  expect(result.stderr).not.toContain(BASIC.slice("Basic ".length));
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

const fortyFive = Array.from({ length: 45 }, (_, i) => track(i + 1));

describe("wh ingest", () => {
  it("sends 45 lines in batches of 20, 20 and 5, exits 0 and prints a summary", async () => {
    const receiver = await server();
    const { cwd, file } = await ndjson(fortyFive);
    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver)], { cwd });

    expect(result.code).toBe(0);
    expect(batchSizes(receiver)).toEqual([20, 20, 5]);
    for (const request of receiver.requests) {
      expect(request.method).toBe("POST");
      expect(request.path).toBe("/v1/batch");
      expect(request.headers.authorization).toBe(BASIC);
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["user-agent"]).toMatch(/^wh\/\d+\.\d+\.\d+/);
    }
    const lineNumbers = received(receiver).map((message) => (message.properties as { line: number }).line);
    expect(lineNumbers.sort((a, b) => a - b)).toEqual(Array.from({ length: 45 }, (_, i) => i + 1));
    for (const message of received(receiver)) expect(message.context).toMatchObject({ library: { name: "wh" } });
    expect(result.stdout).toMatch(/^45 sent in 3 batch(es)?, 0 failed, 0 invalid/m);
    expect(result.stderr).not.toMatch(/analytics:/);
    expectNoWriteKey(result);
  });

  it("keeps the context.library of a batch line (and of a message that names one), naming wh only where none is named", async () => {
    const receiver = await server();
    const library = { name: "analytics.js", version: "2.11.1" };
    const own = { name: "analytics-python", version: "2.3.4" };
    const batch = {
      batch: [
        { type: "track", userId: "u1", event: "A", messageId: "m-a" },
        { type: "track", userId: "u1", event: "B", messageId: "m-b", context: { library: own } },
      ],
      context: { library, locale: "de-DE" },
    };
    const { cwd, file } = await ndjson([JSON.stringify(batch), track(1)]);

    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver)], { cwd });

    expect(result.code, result.stderr).toBe(0);
    const byId = new Map(received(receiver).map((message) => [message.messageId, message.context as Record<string, unknown>]));
    expect(byId.get("m-a")).toEqual({ library, locale: "de-DE" });
    expect(byId.get("m-b")).toEqual({ library: own, locale: "de-DE" });
    expect(received(receiver).find((message) => message.event === "Line Sent")?.context).toMatchObject({ library: { name: "wh" } });
  });

  it("reports invalid lines as line N: reason, skips them, sends the rest and exits 1", async () => {
    const receiver = await server();
    const { cwd, file } = await ndjson([
      track(1),
      "{not json",
      track(3),
      JSON.stringify({ type: "track", userId: "u4" }),
      track(5),
      JSON.stringify({ type: "track", userId: "u6", event: "Huge", properties: { pad: "x".repeat(33_000) } }),
      JSON.stringify({ type: "alias", userId: "u7" }),
      track(8),
    ]);
    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver)], { cwd });

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^line 2: invalid: invalid JSON/m);
    expect(result.stderr).toMatch(/^line 4: invalid: You must pass 'event'\.$/m);
    expect(result.stderr).toMatch(/^line 6: invalid: message is \d+ bytes of JSON; the limit is 32000 bytes/m);
    expect(result.stderr).toMatch(/^line 7: invalid: You must pass a 'previousId'\.$/m);
    expect(result.stderr).not.toMatch(/^line [1358]:/m);
    expect(received(receiver).map((message) => (message.properties as { line: number }).line)).toEqual([1, 3, 5, 8]);
    expect(result.stdout).toMatch(/^4 sent in 1 batch(es)?, 0 failed, 4 invalid/m);
    expectNoWriteKey(result);
  });

  it("takes the write key and endpoint from WH_WRITE_KEY and WH_ENDPOINT", async () => {
    const receiver = await server();
    const { cwd, file } = await ndjson([track(1), track(2)]);
    const result = await runInProcess(["ingest", file], { cwd, env: { WH_WRITE_KEY: WRITE_KEY, WH_ENDPOINT: endpointOf(receiver) } });

    expect(result.code).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.headers.authorization).toBe(BASIC);
    expect(received(receiver)).toHaveLength(2);
    expectNoWriteKey(result);
  });

  it("takes the write key and endpoint from ingest in .whrc.json", async () => {
    const receiver = await server();
    const { cwd } = await ndjson([track(1), track(2), track(3)]);
    await writeFile(join(cwd, ".whrc.json"), JSON.stringify({ ingest: { endpoint: `${endpointOf(receiver)}/api`, writeKey: WRITE_KEY } }));
    const result = await runInProcess(["ingest", "events.ndjson"], { cwd });

    expect(result.code).toBe(0);
    expect(receiver.requests.map((request) => request.path)).toEqual(["/api/v1/batch"]);
    expect(receiver.requests[0]!.headers.authorization).toBe(BASIC);
    expect(received(receiver)).toHaveLength(3);
    expectNoWriteKey(result);
  });

  it("reads standard input with -", async () => {
    const receiver = await server();
    const result = await runInProcess(["ingest", "-", "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver), "--flush-at", "2"], {
      input: `${[track(1), track(2), track(3)].join("\n")}\n`,
    });

    expect(result.code).toBe(0);
    expect(batchSizes(receiver)).toEqual([2, 1]);
    expect(result.stdout).toMatch(/^3 sent in 2 batch(es)?/m);
    expectNoWriteKey(result);
  });

  it("prints one JSON record per line with --json, the last a summary", async () => {
    const receiver = await server();
    const { cwd, file } = await ndjson([...fortyFive, "{oops"]);
    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver), "--json"], { cwd });

    expect(result.code).toBe(1);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.length).toBeGreaterThan(1);
    const summary = records.at(-1);
    expect(summary).toMatchObject({ summary: true, sent: 45, failed: 0, invalid: 1, batches: 3 });
    expect(records.filter((record) => record.outcome === "sent").map((record) => record.messages)).toEqual(expect.arrayContaining([20, 20, 5]));
    expect(records).toContainEqual(expect.objectContaining({ line: 46, outcome: "invalid" }));
    expectNoWriteKey(result);
  });

  it("exits 1 and reports the batch when the endpoint answers 400", async () => {
    const receiver = await server({ replies: [400] });
    const { cwd, file } = await ndjson([track(1), track(2), track(3)]);
    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver)], { cwd });

    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect(result.stderr).toMatch(/batch of 3 failed: HTTP 400/);
    expect(result.stdout).toMatch(/^0 sent in 1 batch(es)?, 3 failed, 0 invalid/m);
    expectNoWriteKey(result);
  });

  it("logs analytics: lines on stderr with DEBUG=analytics, without the write key", async () => {
    const receiver = await server();
    const { cwd, file } = await ndjson([track(1), track(2)]);
    const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver)], { cwd, env: { DEBUG: "analytics" } });

    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^analytics: enqueue track /m);
    expect(result.stderr).toMatch(/^analytics: flush 2 messages, \d+ bytes/m);
    expect(result.stderr).toMatch(/^analytics: response HTTP 200/m);
    expect(result.stdout).not.toMatch(/analytics:/);
    expectNoWriteKey(result);
  });

  describe("usage errors (exit 2)", () => {
    it("exits 2 without a write key", async () => {
      const receiver = await server();
      const { cwd, file } = await ndjson([track(1)]);
      const result = await runInProcess(["ingest", file, "--endpoint", endpointOf(receiver)], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/no write key/);
      expect(receiver.requests).toHaveLength(0);
    });

    it("exits 2 without an endpoint", async () => {
      const { cwd, file } = await ndjson([track(1)]);
      const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/no ingestion endpoint/);
      expectNoWriteKey(result);
    });

    it("exits 2 with a relative endpoint", async () => {
      const { cwd, file } = await ndjson([track(1)]);
      const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", "/v1"], { cwd });
      expect(result.code).toBe(2);
      expectNoWriteKey(result);
    });

    it("exits 2 with --flush-at 0", async () => {
      const receiver = await server();
      const { cwd, file } = await ndjson([track(1)]);
      const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver), "--flush-at", "0"], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--flush-at/);
      expect(receiver.requests).toHaveLength(0);
      expectNoWriteKey(result);
    });

    it("exits 2 with an unreadable --flush-after", async () => {
      const receiver = await server();
      const { cwd, file } = await ndjson([track(1)]);
      const result = await runInProcess(["ingest", file, "--write-key", WRITE_KEY, "--endpoint", endpointOf(receiver), "--flush-after", "soon"], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--flush-after/);
      expect(receiver.requests).toHaveLength(0);
    });
  });
});
