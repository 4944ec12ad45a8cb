import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { hmacHex, lines, makeTempDir, removeTempDirs, run, startWh, STACK_TRACE, type WhProcess } from "./run-wh.js";

const SECRET = "listen-secret";

const running: WhProcess[] = [];

afterEach(async () => {
  // A test that failed half-way must not leave its receiver running.
  for (const wh of running.splice(0)) {
    if (wh.child.exitCode === null && wh.child.signalCode === null) {
      wh.child.kill("SIGKILL");
      await wh.exited;
    }
  }
});
afterAll(removeTempDirs);

interface Listening {
  listening: string;
  port: number;
}

/** Starts `wh listen --json ...` and waits for the record that gives its URL. */
async function listen(args: readonly string[], options: Parameters<typeof startWh>[1] = {}): Promise<{ wh: WhProcess; url: string }> {
  const wh = await startWh(["listen", "--port", "0", "--json", ...args], options);
  running.push(wh);
  const stdout = await wh.waitForStdout((text) => text.includes("\n"));
  const record = JSON.parse(stdout.slice(0, stdout.indexOf("\n"))) as Listening;
  expect(record.listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  expect(record.port).toBeGreaterThan(0);
  return { wh, url: record.listening };
}

/** The JSON records wh listen has printed so far, after the first (listening) one. */
function requestRecords(wh: WhProcess): Record<string, unknown>[] {
  return lines(wh.stdout())
    .slice(1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function waitForRecords(wh: WhProcess, count: number): Promise<string> {
  return wh.waitForStdout((text) => lines(text).length >= count + 1 && text.endsWith("\n"));
}

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  await response.arrayBuffer();
  return response.status;
}

describe("wh listen", () => {
  it("answers 200 to a correctly signed request and 401 to a wrong or missing signature, capturing only the accepted body", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--out", out], { cwd });
    const good = JSON.stringify({ version: 1, type: "track", userId: "u1", event: "Order Completed", properties: { total: 99.5 }, messageId: "m-1", timestamp: "2026-11-21T09:30:08.276Z" });
    const bad = JSON.stringify({ version: 1, type: "track", userId: "u2", event: "Forged", properties: {}, messageId: "m-2", timestamp: "2026-11-21T09:30:09.000Z" });

    expect(await post(url, good, { "X-Signature": hmacHex(SECRET, good) })).toBe(200);
    expect(await post(url, bad, { "X-Signature": hmacHex("wrong-secret", bad) })).toBe(401);
    expect(await post(url, bad)).toBe(401);
    await waitForRecords(wh, 3);

    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    const [capture, ...others] = lines(await readFile(out, "utf8")).map((line) => JSON.parse(line) as Record<string, any>);
    expect(others).toEqual([]);
    expect(capture).toMatchObject({ method: "POST", path: "/", body: good, headers: { "x-signature": hmacHex(SECRET, good) } });
    expect(Number.isNaN(Date.parse(capture?.receivedAt))).toBe(false);

    const records = requestRecords(wh);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({ method: "POST", signature: "valid", status: 200, captured: true, body: JSON.parse(good) as unknown });
    expect(records[1]).toMatchObject({ signature: "invalid", status: 401, captured: false });
    expect(records[2]).toMatchObject({ signature: "missing", status: 401, captured: false });
  });

  it("appends to an existing capture file", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const bodies = ['{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}', '{"type":"delete","userId":"u2","timestamp":"2026-11-21T09:36:00.000Z"}'];
    for (const body of bodies) {
      const { wh, url } = await listen(["--secret", SECRET, "--out", "captured.ndjson"], { cwd });
      expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
      await waitForRecords(wh, 1);
      wh.child.kill("SIGINT");
      expect((await wh.exited).code).toBe(0);
    }
    expect(lines(await readFile(out, "utf8")).map((line) => (JSON.parse(line) as { body: string }).body)).toEqual(bodies);
  });

  it("answers with --status and captures nothing when that status is not 2xx", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--status", "503", "--out", out], { cwd });
    const body = '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}';
    expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(503);
    await waitForRecords(wh, 1);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    expect(await readFile(out, "utf8")).toBe("");
  });

  it("accepts unsigned requests without checking when it has no secret", async () => {
    const { wh, url } = await listen([]);
    expect(await post(url, '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}')).toBe(200);
    await waitForRecords(wh, 1);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    expect(requestRecords(wh)[0]).toMatchObject({ signature: "unchecked", status: 200 });
  });

  it("checks signatures with WH_SHARED_SECRET", async () => {
    const { wh, url } = await listen([], { env: { WH_SHARED_SECRET: SECRET } });
    const body = '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}';
    expect(await post(url, body, { "X-Signature": hmacHex("other", body) })).toBe(401);
    expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
    await waitForRecords(wh, 2);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
  });

  it("prints one human line per request without --json", async () => {
    const wh = await startWh(["listen", "--port", "0", "--secret", SECRET]);
    running.push(wh);
    const stderr = await wh.waitForStderr((text) => /listening on http\S+/.test(text));
    const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
    expect(url).toBeDefined();
    const body = JSON.stringify({ version: 1, type: "track", userId: "u1", event: "Order Completed", properties: {}, messageId: "m-1", timestamp: "2026-11-21T09:30:08.276Z" });
    expect(await post(url as string, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
    await wh.waitForStdout((text) => text.endsWith("\n"));
    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("200");
    expect(result.stdout).toContain("Order Completed");
    expect(result.stdout).toMatch(/signature verified/);
  });

  it("exits 2 on a --port that is not a port number", async () => {
    const result = await run(["listen", "--port", "http"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--port");
  });
});

describe("wh send to wh listen, end to end", () => {
  it("delivers a signed message that the receiver verifies and captures byte for byte", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--out", out], { cwd });

    const track = ["send", "track", "--url", url, "--user-id", "u1", "--event", "Order Completed", "--prop", "total=99.5", "--message-id", "m-e2e", "--timestamp", "2026-11-21T10:30:08.276+01:00", "--retry-window", "1s"];
    const dryRun = await run([...track, "--dry-run", "--json"], { env: { WH_SHARED_SECRET: SECRET } });
    expect(dryRun.code).toBe(0);
    const planned = JSON.parse(dryRun.stdout) as { body: string; signature: string };
    const sent = await run([...track, "--json"], { env: { WH_SHARED_SECRET: SECRET } });
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ outcome: "delivered", deliveredTo: url, messageId: "m-e2e" });
    await waitForRecords(wh, 1);

    const forged = await run(["send", "identify", "--url", url, "--user-id", "u2", "--secret", "wrong-secret", "--retry-window", "1s"]);
    expect(forged.code).toBe(1);
    expect(`${forged.stdout}${forged.stderr}`).toContain("401");
    await waitForRecords(wh, 2);

    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    const records = requestRecords(wh);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ signature: "valid", status: 200, captured: true, body: { type: "track", userId: "u1", event: "Order Completed", properties: { total: 99.5 }, messageId: "m-e2e" } });
    expect(records[1]).toMatchObject({ signature: "invalid", status: 401, captured: false });

    const captured = lines(await readFile(out, "utf8")).map((line) => JSON.parse(line) as { body: string; headers: Record<string, string> });
    expect(captured).toHaveLength(1);
    expect(JSON.parse(captured[0]?.body as string)).toMatchObject({ type: "track", messageId: "m-e2e" });
    // The capture holds the very bytes that were signed, and the signature they came with.
    expect(captured[0]?.body).toBe(planned.body);
    expect(captured[0]?.headers["x-signature"]).toBe(planned.signature);
    const verified = await run(["verify", "--secret", SECRET, "--signature", planned.signature], { input: captured[0]?.body });
    expect(verified.code).toBe(0);
    const table = await run(["verify", "--capture", out, "--secret", SECRET]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^1\s+POST\s+\/\s+track\s+u1\s+valid$/m);
  });
});
