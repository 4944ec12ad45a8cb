import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult, killedAfterEach } from "../../helpers/run-wh.js";

/** Distinctive enough that any appearance in the output is a leak. */
const LEAK = /LEAKED/;
const SECRET = "redaction-secret";

const running = killedAfterEach();
afterAll(removeTempDirs);

function expectNoLeak(result: Pick<RunResult, "stdout" | "stderr">): void {
  expect(result.stdout).not.toMatch(LEAK);
  expect(result.stderr).not.toMatch(LEAK);
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

const TRACK = ["send", "track", "--user-id", "u1", "--event", "E", "--secret", SECRET];

describe("secrets in URLs and headers are masked in every output and capture", () => {
  const target = closedAfterEach();

  it.each([[[]], [["--json"]]])("wh send --verbose %j masks a token used as the URL's user name, in the attempt lines and the result", async (flags) => {
    const receiver = await target();
    const url = receiver.url.replace("http://", "http://sk_live_LEAKED@");
    const result = await runInProcess([...TRACK, "--verbose", "--url", url, ...flags]);
    expect(result.code, result.stderr).toBe(0);
    expectNoLeak(result);
    expect(`${result.stdout}${result.stderr}`).toContain(receiver.url.replace("http://", "http://***@"));
    // Sent as curl sends it: the user name as HTTP basic auth.
    expect(receiver.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from("sk_live_LEAKED:").toString("base64")}`);
  });

  it.each([
    ["a malformed escape as a value", "?token=%zzLEAKED&plain=1"],
    ["a malformed escape beside a token", "?%zz&token=LEAKED"],
  ])("wh send to a URL with %s neither crashes nor leaks", async (_case, query) => {
    const receiver = await target();
    for (const flags of [[], ["--json"]]) {
      const result = await runInProcess([...TRACK, "--verbose", "--url", `${receiver.url}${query}`, ...flags]);
      expect(result.code, result.stderr).toBe(0);
      expectNoLeak(result);
      expect(`${result.stdout}${result.stderr}`).toContain("token=***");
    }
    expect(receiver.requests[0]?.path).toBe(`/hook${query}`);
  });

  it.each([[[]], [["--json"]]])("wh ingest %j names a bad --endpoint without its password", async (flags) => {
    for (const endpoint of ["ftp://user:pa55LEAKED@x/", "http://user:pa55LEAKED@", "http://sk_LEAKED@"]) {
      const result = await runInProcess([...flags, "ingest", "--endpoint", endpoint, "--write-key", "wk", "-"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("--endpoint");
      expectNoLeak(result);
    }
  });

  it("wh listen --out masks X-Auth-Token and a query token in the capture and the output, keeps X-Signature, and the capture still verifies", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET, "--out", out, "--json"], { cwd });
    running(wh);
    const url = (JSON.parse(lines(await wh.waitForStdout((text) => text.includes("\n")))[0] as string) as { listening: string }).listening;
    const body = '{"version":1,"type":"track","userId":"u1","event":"E","messageId":"m-1","timestamp":"2026-11-22T10:00:00.000Z"}';
    const answer = await fetch(`${url}hook?token=LEAKED-1&x=1`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-signature": hmacHex(SECRET, body), "x-auth-token": "LEAKED-2", cookie: "session=LEAKED-3" },
    });
    expect(answer.status).toBe(200);
    await wh.waitForStdout((text) => lines(text).length >= 2);
    wh.child.kill("SIGINT");
    const listened = await wh.exited;
    expectNoLeak(listened);
    expect(listened.stdout).toContain('"path":"/hook?token=***&x=1"');

    const capture = await readFile(out, "utf8");
    expect(capture).not.toMatch(LEAK);
    const record = JSON.parse(capture) as { path: string; headers: Record<string, string>; body: string };
    expect(record).toMatchObject({
      path: "/hook?token=***&x=1",
      body,
      headers: { "x-auth-token": "***", cookie: "***", "x-signature": hmacHex(SECRET, body) },
    });
    const verified = await runInProcess(["verify", "--capture", out, "--secret", SECRET], { cwd });
    expect(verified.code, verified.stdout).toBe(0);
  });

  it("wh listen --forward-to names the app's URL without its credentials, in its log, its records and the 502 answer", async () => {
    const app = await target();
    await app.close();
    const forwardTo = app.url.replace("http://", "http://user:pa55LEAKED@");
    const wh = await startInProcess(["listen", "--port", "0", "--forward-to", forwardTo, "--json"]);
    running(wh);
    const url = (JSON.parse(lines(await wh.waitForStdout((text) => text.includes("\n")))[0] as string) as { listening: string }).listening;
    const answer = await fetch(url, { method: "POST", body: '{"type":"track","userId":"u1","event":"E"}', headers: { "content-type": "application/json" } });
    expect(answer.status).toBe(502);
    expect(await answer.text()).not.toMatch(LEAK);
    await wh.waitForStdout((text) => lines(text).length >= 2);
    wh.child.kill("SIGINT");
    const listened = await wh.exited;
    expectNoLeak(listened);
    expect(listened.stdout).toContain(app.url.replace("http://", "http://***:***@"));
  });
});
