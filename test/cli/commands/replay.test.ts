import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Journal } from "../../../src/adapters/journal.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { bodyOf, countByMessageId, exists, manyEvents, messageIdOf, readNdjson, runSigned, SECRET, spawnSigned, trackLine } from "./replay-helpers.js";
import { hmacHex, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

const receiver = closedAfterEach();

afterAll(removeTempDirs);

function stdoutRecords(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function expectNoSecret(...texts: string[]): void {
  for (const text of texts) expect(text).not.toContain(SECRET);
}

describe("wh replay: order and concurrency", () => {
  it("keeps each user's events in file order under --concurrency 16 while some users answer slowly", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(200, 10);
    await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
    const slowUsers = new Set(["user-3", "user-7"]);
    const server = await receiver({
      replies: (request, index) => {
        const userId = String(bodyOf(request).userId);
        return slowUsers.has(userId) ? { status: 200, delayMs: 20 + ((index * 7) % 41) } : 200;
      },
    });

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--concurrency", "16"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    const counts = countByMessageId(server.requests);
    expect(counts.size).toBe(200);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    for (let user = 0; user < 10; user += 1) {
      const userId = `user-${user}`;
      const sent = events.filter((event) => event.userId === userId).map((event) => event.messageId);
      const received = server.requests.filter((request) => bodyOf(request).userId === userId).map(messageIdOf);
      expect(received, userId).toEqual(sent);
    }
  });

  it("delivers every event exactly once with --ordered none", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(200, 10);
    await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
    const server = await receiver({ replies: (request) => (bodyOf(request).userId === "user-3" ? { status: 200, delayMs: 30 } : 200) });

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--concurrency", "16", "--ordered", "none"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    // The V8 flag the runner sets at run time (adapters/v8-flags.ts) is one this Node knows.
    expect(result.stderr).not.toContain("unrecognized flag");
    const counts = countByMessageId(server.requests);
    expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId));
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
  });

  it("opens no more connections than --concurrency: a connection an answer frees carries the next event", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(400, 40);
    await writeFile(
      join(dir, "events.ndjson"),
      events
        .map(
          (event) => `${event.line}
`,
        )
        .join(""),
    );
    const server = await receiver({ replies: [{ status: 200, delayMs: 2 }] });

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--concurrency", "8", "--ordered", "none"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests).toHaveLength(400);
    expect(server.connections).toBeGreaterThan(0);
    expect(server.connections).toBeLessThanOrEqual(8);
  });
});

describe("wh replay --rate", () => {
  it("starts no more events per second than --rate allows", async () => {
    const server = await receiver();
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      `${manyEvents(11, 11)
        .map((event) => event.line)
        .join("\n")}\n`,
    );
    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--rate", "20"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(server.requests).toHaveLength(11);
    // Eleven starts at 20 per second are ten gaps of 50 ms: the last comes at least ~500 ms after the first.
    const first = server.requests[0]?.at ?? 0;
    const last = server.requests[10]?.at ?? 0;
    expect(last - first).toBeGreaterThanOrEqual(450);
  });
});

describe("wh replay: invalid lines and failures", () => {
  it("delivers the valid lines, dead-letters each invalid line with its line number and reason, and exits 1", async () => {
    const dir = await makeTempDir();
    const big = JSON.stringify({ type: "track", userId: "u-big", event: "Big", properties: { blob: "x".repeat(33_000) } });
    const input = [
      trackLine("u1", "ok-1"), // 1
      "", // 2
      "{not json", // 3
      trackLine("u2", "ok-2"), // 4
      JSON.stringify({ type: "track", userId: 42, event: "Number user" }), // 5
      "   ", // 6
      JSON.stringify({ type: "track", userId: "u3" }), // 7
      big, // 8
      trackLine("u1", "ok-3"), // 9
    ];
    await writeFile(join(dir, "events.ndjson"), `${input.join("\n")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect(server.requests.map(messageIdOf)).toEqual(["ok-1", "ok-2", "ok-3"]);
    const deadLetters = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(deadLetters.map((record) => record.line)).toEqual([3, 5, 7, 8]);
    for (const record of deadLetters) {
      expect(record.outcome).toBe("invalid");
      expect(record.original).toBe(input[(record.line as number) - 1]);
    }
    const reasons = deadLetters.map((record) => String(record.reason));
    expect(reasons[0]).toMatch(/JSON/);
    expect(reasons[1]).toMatch(/userId/);
    expect(reasons[2]).toMatch(/event/);
    expect(reasons[3]).toMatch(/32/);
    for (const line of [3, 5, 7, 8]) expect(result.stderr).toMatch(new RegExp(`\\bline ${line}\\b`));
    const deadLetterText = JSON.stringify(deadLetters);
    expectNoSecret(deadLetterText, result.stdout, result.stderr);
  });

  it("dead-letters every event with its URL's last status 500 once the retry window closes, and exits 1", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(5, 5);
    await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
    const server = await receiver({ replies: [500] });

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--retry-window", "1s"], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    const deadLetters = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(deadLetters.map((record) => record.line).sort((a, b) => (a as number) - (b as number))).toEqual([1, 2, 3, 4, 5]);
    for (const record of deadLetters) {
      expect(record.outcome).toBe("failed");
      expect(record.original).toBe(events[(record.line as number) - 1]?.line);
      const urls = record.urls as Record<string, unknown>[];
      expect(urls).toHaveLength(1);
      expect(urls[0]).toMatchObject({ url: server.url, status: 500 });
    }
    expect(new Set(server.requests.map(messageIdOf))).toEqual(new Set(events.map((event) => event.messageId)));
    expectNoSecret(JSON.stringify(deadLetters), result.stdout, result.stderr);
  });

  it("fails an event answered 404 at once, without retrying, and dead-letters it", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(3, 3);
    await writeFile(join(dir, "events.ndjson"), events.map((event) => `${event.line}\n`).join(""));
    const server = await receiver({ replies: [404] });

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect(server.requests.map(messageIdOf).sort()).toEqual(events.map((event) => event.messageId));
    const deadLetters = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(deadLetters).toHaveLength(3);
    for (const record of deadLetters) {
      expect(record.outcome).toBe("failed");
      expect((record.urls as Record<string, unknown>[])[0]).toMatchObject({ status: 404, attempts: 1 });
    }
  });

  it("writes failures to the file --dead-letter names", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\nnope\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--dead-letter", "bad.ndjson"], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect((await readNdjson(join(dir, "bad.ndjson"))).map((record) => record.line)).toEqual([2]);
    expect(await exists(join(dir, "events.ndjson.failed.ndjson"))).toBe(false);
  });
});

describe("wh replay: a second Ctrl-C", () => {
  it("exits 130 at once, without waiting for deliveries in flight, and keeps the journal", async () => {
    let wh: ReturnType<typeof spawnSigned> | undefined;
    const server = await receiver({
      replies: (_request, index) => {
        if (index === 0) {
          // Both signals while the first delivery hangs: the first asks for a clean stop (which
          // would wait up to 5 s for the delivery in flight), the second ends the process.
          wh?.child.kill("SIGINT");
          setTimeout(() => wh?.child.kill("SIGINT"), 200);
        }
        return "hang";
      },
    });
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      `${manyEvents(5, 5)
        .map((event) => event.line)
        .join("\n")}\n`,
    );
    wh = spawnSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });
    const result = await wh.exited;
    expect(result.code, result.stderr).toBe(130);
    // The clean stop ends with a summary and how to resume; the second Ctrl-C leaves before that.
    expect(result.stdout).not.toContain("resume with");
    expect(await exists(join(dir, "events.ndjson.wh-journal"))).toBe(true);
  });
});

describe("wh replay: standard input", () => {
  it("delivers every line fed on standard input with -", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(50, 5);
    const server = await receiver();

    const result = await runSigned(["replay", "-", "--url", server.url], { cwd: dir, input: events.map((event) => `${event.line}\n`).join("") });

    expect(result.code, result.stderr).toBe(0);
    const counts = countByMessageId(server.requests);
    expect([...counts.keys()].sort()).toEqual(events.map((event) => event.messageId));
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
  });

  it("writes invalid standard-input lines to wh-failed.ndjson in the working directory", async () => {
    const dir = await makeTempDir();
    const server = await receiver();
    const input = `${trackLine("u1", "m1")}\n[1, 2\n${trackLine("u1", "m2")}\n`;

    const result = await runSigned(["replay", "-", "--url", server.url], { cwd: dir, input });

    expect(result.code, result.stderr).toBe(1);
    expect(server.requests.map(messageIdOf)).toEqual(["m1", "m2"]);
    const deadLetters = await readNdjson(join(dir, "wh-failed.ndjson"));
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({ line: 2, outcome: "invalid", original: "[1, 2" });
  });
});

describe("wh replay --dry-run", () => {
  it("sends nothing and prints each body with its headers and X-Signature, writing no journal or dead-letter file", async () => {
    const dir = await makeTempDir();
    const input = [
      trackLine("u1", "m1"),
      JSON.stringify({ type: "identify", userId: "u2", traits: { plan: "pro", name: "Zoë" }, messageId: "m2", timestamp: "2026-11-21T09:30:08.276Z" }),
    ];
    await writeFile(join(dir, "events.ndjson"), `${input.join("\n")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--dry-run"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    const bodies = result.stdout.split("\n").filter((line) => line.startsWith("{"));
    expect(bodies).toHaveLength(2);
    expect(bodies.map((body) => JSON.parse(body) as Record<string, unknown>).map((body) => body.messageId)).toEqual(["m1", "m2"]);
    expect(JSON.parse(bodies[0] ?? "")).toMatchObject({ version: 1, type: "track", userId: "u1", event: "Replayed", timestamp: "2026-11-21T09:30:08.276Z" });
    for (const body of bodies) expect(result.stdout).toContain(`X-Signature: ${hmacHex(SECRET, Buffer.from(body, "utf8"))}`);
    expect(result.stdout).toMatch(/^Content-Type: application\/json$/m);
    expect(result.stdout).toMatch(/^User-Agent: wh\/\S+$/m);
    expect(result.stdout).toContain(`POST ${server.url}`);
    expectNoSecret(result.stdout, result.stderr);
    expect((await readdir(dir)).sort()).toEqual(["events.ndjson", "package.json"]);
  });

  it("prints the same body and signature as JSON records with --json", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--dry-run", "--json"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    const shown = stdoutRecords(result.stdout).find((record) => record.dryRun === true);
    expect(shown).toBeDefined();
    const body = String(shown?.body);
    expect(shown?.signature).toBe(hmacHex(SECRET, body));
    expect((shown?.headers as Record<string, string> | undefined)?.["X-Signature"]).toBe(hmacHex(SECRET, body));
  });
});

describe("wh replay --json", () => {
  it("prints one parseable record per event line and a final summary, and nothing else on stdout", async () => {
    const dir = await makeTempDir();
    const input = [
      trackLine("u-ok", "ok-1"), // 1 delivered
      trackLine("u-bad", "bad-1"), // 2 failed (404)
      "", // 3 blank: no record
      "{oops", // 4 invalid
      trackLine("u-skip", "skip-1", { integrations: { Webhooks: false } }), // 5 skipped
      trackLine("u-ok", "ok-2"), // 6 delivered
    ];
    await writeFile(join(dir, "events.ndjson"), `${input.join("\n")}\n`);
    const server = await receiver({ replies: (request) => (bodyOf(request).userId === "u-bad" ? 404 : 200) });

    const result = await runSigned(["--json", "replay", "events.ndjson", "--url", server.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout.endsWith("\n")).toBe(true);
    const records = stdoutRecords(result.stdout);
    const perLine = records.filter((record) => record.summary !== true);
    const summaries = records.filter((record) => record.summary === true);
    expect(summaries).toHaveLength(1);
    expect(records.at(-1)).toBe(summaries[0]);
    expect(Object.fromEntries(perLine.map((record) => [record.line, record.outcome]))).toEqual({
      1: "delivered",
      2: "failed",
      4: "invalid",
      5: "skipped",
      6: "delivered",
    });
    expect(perLine).toHaveLength(5);
    expect(summaries[0]).toMatchObject({ delivered: 2, failed: 1, invalid: 1, skipped: 1 });
    expectNoSecret(result.stdout, result.stderr);
  });

  it("skips events whose integrations turn Webhooks off, sends nothing for them and exits 0", async () => {
    const dir = await makeTempDir();
    const input = [
      trackLine("u1", "m1"),
      trackLine("u1", "m2", { integrations: { Webhooks: false } }),
      trackLine("u1", "m3", { integrations: { All: false } }),
      trackLine("u1", "m4", { integrations: { All: false, Webhooks: true } }),
    ];
    await writeFile(join(dir, "events.ndjson"), `${input.join("\n")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--json"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests.map(messageIdOf)).toEqual(["m1", "m4"]);
    const records = stdoutRecords(result.stdout);
    const perLine = records.filter((record) => record.summary !== true).sort((a, b) => (a.line as number) - (b.line as number));
    expect(perLine.map((record) => [record.line, record.outcome])).toEqual([
      [1, "delivered"],
      [2, "skipped"],
      [3, "skipped"],
      [4, "delivered"],
    ]);
    expect(records.at(-1)).toMatchObject({ summary: true, delivered: 2, skipped: 2, invalid: 0, failed: 0 });
    expect(await exists(join(dir, "events.ndjson.failed.ndjson"))).toBe(false);
  });
});

describe("wh replay of an outbound capture", () => {
  it("with --exact-bytes sends the exact bytes of lines already in the outbound shape, and by default their compact serialisation", async () => {
    const dir = await makeTempDir();
    // Key order, spacing and escapes a re-serialisation would change.
    const captured = [
      '{"version":1,"type":"track","userId":"u1","event":"Order Completed","properties":{"total":1.50,"note":"caf\\u00e9"},"messageId":"cap-1","timestamp":"2026-11-21T09:30:08.276Z"}',
      '{"type":"identify","version":1,"userId":"u2","traits":{"name":"Zoë"},"messageId":"cap-2","timestamp":"2026-11-21T09:30:09.000Z"}',
      '{"version":1,"type":"alias","Previous ID":"anon-1","User ID":"u3","messageId":"cap-3","timestamp":"2026-11-21T09:30:10.000Z"}',
    ];
    await writeFile(join(dir, "captured.ndjson"), `${captured.join("\n")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "captured.ndjson", "--url", server.url, "--concurrency", "1", "--exact-bytes"], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests.map((request) => request.body.toString("utf8"))).toEqual(captured);
    for (const request of server.requests) expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));

    const canonical = await runSigned(["replay", "captured.ndjson", "--url", server.url, "--concurrency", "1"], { cwd: dir });
    expect(canonical.code, canonical.stderr).toBe(0);
    const bodies = server.requests.slice(3).map((request) => request.body.toString("utf8"));
    expect(bodies).toEqual(captured.map((line) => JSON.stringify(JSON.parse(line))));
    // What receivers that verify JSON.stringify(req.body) compute: the signature matches.
    for (const request of server.requests.slice(3))
      expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, JSON.stringify(JSON.parse(request.body.toString("utf8")))));
  });
});

describe("wh replay: bad usage", () => {
  it("exits 2 naming the file when the input does not exist", async () => {
    const dir = await makeTempDir();
    const result = await runSigned(["replay", "missing-events.ndjson", "--url", "http://127.0.0.1:9/hook"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing-events.ndjson");
  });

  it.each([
    ["--concurrency 0", ["--concurrency", "0"], /--concurrency/],
    ["--ordered bogus", ["--ordered", "bogus"], /--ordered/],
    ["--rate abc", ["--rate", "abc"], /--rate/],
  ])("exits 2 on %s and sends nothing", async (_name, flags, message) => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, ...flags], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it("exits 2 on --resume with a journal that belongs to another input, and sends nothing", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const destination = { fingerprint: "f", description: "d", parts: {} };
    const opened = await Journal.open(join(dir, "events.ndjson.wh-journal"), { command: "replay", input: join(dir, "other.ndjson"), destination }, false);
    opened.journal.markFinished({ number: 1, original: trackLine("u1", "m1") }, "delivered");
    opened.journal.close();
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--resume"], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/belongs to `wh replay` of .*other\.ndjson/);
    expect(server.requests).toHaveLength(0);
  });
});
