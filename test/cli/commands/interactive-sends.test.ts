import { once } from "node:events";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, startRecordingServer } from "../../helpers/recording-server.js";
import { inProcess, runInProcess } from "../../helpers/in-process.js";
import { virtualClock } from "../../helpers/virtual-clock.js";
import { readNdjson, SECRET, trackLine } from "./replay-helpers.js";
import { FIXTURES, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// Issue 27 item 6: sending to nothing, as a person at a terminal meets it. In-process here; the
// same behaviours on a real pseudo-terminal are in interactive-sends-pty.test.ts.

const server = closedAfterEach();
afterAll(removeTempDirs);

const env = { WH_SHARED_SECRET: SECRET };
const tls = (name: string): string => readFileSync(join(FIXTURES, "tls", name), "utf8");

/** A port on 127.0.0.1 that nothing listens on (a server's, just closed). */
async function closedPort(): Promise<number> {
  const closed = await startRecordingServer();
  await closed.close();
  return closed.port;
}

async function eventsFile(lines: string[]): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), `${lines.join("\n")}\n`);
  return dir;
}

describe("a run stopped while its events only wait to retry", () => {
  it("ends at once on Ctrl-C (no grace period to wait out), says what was read and finished, and leaves every event to --resume", async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/hook`;
    const dir = await eventsFile([trackLine("u1", "m1"), trackLine("u2", "m2")]);
    // A grace period no test would outlive: only stopping at once lets this run end.
    const wh = inProcess(["replay", "events.ndjson", "--url", url], { cwd: dir, env, timings: { graceMs: 3_600_000 } });
    const progress = await wh.waitForStderr((text) => /2 waiting to retry/.test(text));
    wh.child.kill("SIGINT");
    const result = await wh.exited;

    expect(result.code).toBe(130);
    expect(progress).toMatch(
      /read 100% · 0 of 2 finished · 0 delivered · 0 failed · 0 invalid · 2 waiting to retry · .* waiting on http:\/\/127\.0\.0\.1:\d+\/hook → nothing is listening on 127\.0\.0\.1:\d+ \(connection refused\): retrying until \d\d:\d\d:\d\d — Ctrl-C stops, resumable/,
    );
    expect(progress).not.toMatch(/(^|· )100%/m);
    expect(result.stdout).toMatch(/0 delivered, .* 2 not finished/);
    expect(result.stderr).toMatch(/interrupted: resume with {2}wh replay events\.ndjson .*--resume/);

    // The receiver comes up on that port: --resume sends both events, once each.
    const received: string[] = [];
    const receiver = createServer((request, response) => {
      request.on("data", (chunk: Buffer) => received.push(chunk.toString("utf8")));
      request.on("end", () => response.end());
    });
    receiver.listen(port, "127.0.0.1");
    await once(receiver, "listening");
    try {
      const resumed = await runInProcess(["replay", "events.ndjson", "--url", url, "--resume"], { cwd: dir, env });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(received.map((body) => JSON.parse(body).messageId).sort()).toEqual(["m1", "m2"]);
    } finally {
      receiver.close();
    }
  });

  it("still lets a request on the wire finish within the grace period, and says it hangs", async () => {
    const receiver = await server({ replies: ["hang"] });
    const dir = await eventsFile([trackLine("u1", "m1")]);
    const wh = inProcess(["replay", "events.ndjson", "--url", receiver.url, "--timeout", "1m"], { cwd: dir, env, timings: { hangingAfterMs: 50 } });
    const progress = await wh.waitForStderr((text) => /in flight for more than/.test(text));
    wh.child.kill("SIGINT");
    const result = await wh.exited;

    expect(progress).toMatch(/read 100% · 0 of 1 finished · 0 delivered · 0 failed · 0 invalid · 1 in flight for more than 50ms/);
    // Cut when the (test's short) grace period ended, not before: the receiver had the request.
    expect(result.code).toBe(130);
    expect(receiver.requests).toHaveLength(1);
    expect(result.stdout).toMatch(/1 not finished/);
  });
});

describe("a hanging receiver with a short --timeout", () => {
  it("is said to hang at half the attempt's timeout when that is under 5 s (no request lives past its timeout)", async () => {
    const receiver = await server({ replies: ["hang"] });
    const dir = await eventsFile([trackLine("u1", "m1")]);
    // The default threshold, not the tests' own.
    const wh = inProcess(["replay", "events.ndjson", "--url", receiver.url, "--timeout", "600ms"], { cwd: dir, env, timings: { hangingAfterMs: undefined } });
    const progress = await wh.waitForStderr((text) => /in flight for more than/.test(text));
    wh.child.kill("SIGINT");
    await wh.exited;
    expect(progress).toMatch(/1 in flight for more than 300ms/);
  });
});

describe("a certificate from an unknown issuer", () => {
  it("says to give its CA with --ca in the failure line, the --json reason and the dead letter", async () => {
    const receiver = await server({ tls: { key: tls("self-signed.key"), cert: tls("self-signed.crt") } });
    const dir = await eventsFile([trackLine("u1", "m1")]);
    const hint = "certificate not trusted (self-signed certificate, DEPTH_ZERO_SELF_SIGNED_CERT): give its CA with --ca FILE (or NODE_EXTRA_CA_CERTS)";
    const result = await runInProcess(["replay", "events.ndjson", "--url", receiver.url, "--json"], { cwd: dir, env });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`line 1: failed: ${receiver.url} → ${hint}; no request was sent`);
    const record = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .find((line) => line.line === 1);
    expect(record.reason).toBe(`${receiver.url} → ${hint}; no request was sent`);
    expect(record.urls[0].error).toBe(`${hint}; no request was sent`);
    const [dead] = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(dead?.reason).toBe(`${receiver.url} → ${hint}; no request was sent`);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("wh send's retry window", () => {
  const send = (port: number, extra: string[], isTTY: boolean) => {
    const clock = virtualClock("2026-11-21T09:30:00Z");
    const args = ["send", "track", "--user-id", "u1", "--event", "E", "--url", `http://127.0.0.1:${port}/hook`, ...extra];
    return { clock, result: runInProcess(args, { env, isTTY, clock }) };
  };
  const waited = (slept: number[]): number => slept.reduce((sum, ms) => sum + ms, 0);

  it("is a minute when stderr is a terminal: a person waits for the answer, and it retries until the minute is up, as it says", async () => {
    const { clock, result } = send(await closedPort(), [], true);
    const { code, stdout } = await result;
    expect(code).toBe(1);
    expect(stdout).toMatch(/nothing is listening on 127\.0\.0\.1:\d+ \(connection refused\) \(retry window closed\)/);
    // "retrying until <now + 1 min>": the last wait is cut to end then, for a last attempt then
    // (a virtual clock: only the waits pass time, the attempts to a closed port take none).
    expect(waited(clock.slept)).toBe(60_000);
  });

  it("is Segment's 4 h off a terminal, and --retry-window wins on one", async () => {
    const port = await closedPort();
    const script = send(port, [], false);
    const explicit = send(port, ["--retry-window", "2h"], true);
    expect((await script.result).code).toBe(1);
    expect((await explicit.result).code).toBe(1);
    // Each until its window's end (a window given up after 1 min would be 1 min long).
    expect(waited(script.clock.slept)).toBe(4 * 3_600_000);
    expect(waited(explicit.clock.slept)).toBe(2 * 3_600_000);
  });
});
