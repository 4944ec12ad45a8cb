import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { messageIdOf, readNdjson, runSigned, SECRET, trackLine } from "./replay-helpers.js";
import { runInProcess } from "../../helpers/in-process.js";
import { FIXTURES, hmacHex, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult } from "../../helpers/run-wh.js";
import { eventually, post, startServe, type ServeProcess } from "./serve-helpers.js";

// Input that wh used to change without a word (replacement characters, dropped keys, rounded
// numbers, a corrupt state read as another) is refused, naming the problem; nothing is sent.
// In-process (runMain against src/).

const receiver = closedAfterEach();
const serving: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(serving.map((serve) => serve.stop()));
  await removeTempDirs();
});

const TRACK = ["send", "track", "--user-id", "u1", "--event", "E", "--retry-window", "0s"];
const INVALID_UTF8 = Buffer.concat([Buffer.from('{"type":"track","userId":"u1","event":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);

function expectExit(result: RunResult, code: number): void {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(code);
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

async function serve(args: readonly string[] = []): Promise<{ wh: ServeProcess; hook: RecordingServer }> {
  const hook = await receiver();
  const wh = await startServe(["--url", hook.url, ...args], { cwd: await makeTempDir() });
  serving.push(wh);
  return { wh, hook };
}

describe("invalid UTF-8 is refused everywhere, never sent as U+FFFD", () => {
  it("refuses wh send --data @file with invalid UTF-8 with exit 2 and sends nothing", async () => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, "event.json"), INVALID_UTF8);
    const result = await runSigned([...TRACK, "--data", "@event.json", "--url", hook.url], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toMatch(/--data: event\.json is not valid UTF-8/);
    expect(hook.requests).toHaveLength(0);
  });

  it("refuses wh send --data - with invalid UTF-8 on standard input", async () => {
    const hook = await receiver();
    const result = await runSigned([...TRACK, "--data", "-", "--url", hook.url], { cwd: await makeTempDir(), input: INVALID_UTF8 });
    expectExit(result, 2);
    expect(result.stderr).toMatch(/--data: standard input is not valid UTF-8/);
    expect(hook.requests).toHaveLength(0);
  });

  it("answers wh serve a body with invalid UTF-8 with 400, as a body that is not JSON, and delivers nothing", async () => {
    const { wh, hook } = await serve();
    const answer = await post(wh.url, "/v1/track", INVALID_UTF8, {
      "content-type": "application/json",
      authorization: `Basic ${Buffer.from("wk:").toString("base64")}`,
    });
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({ success: false, message: expect.stringMatching(/not valid UTF-8/) });
    const good = await post(wh.url, "/v1/track", JSON.stringify({ writeKey: "wk", userId: "u2", event: "Fine" }));
    expect(good.status).toBe(200);
    // Had it been accepted, the refused event would have been spooled, and delivered, with the good one.
    await eventually(() => hook.requests.length > 0, "the good event");
    expect(hook.requests.map((request) => JSON.parse(request.body.toString("utf8")).userId)).toEqual(["u2"]);
  });
});

describe("header values are checked where they are given, not on every attempt", () => {
  it.each([
    ["a BEL", "a\u0007b", "U+0007"],
    ["an ESC", "\u001b[31mred", "U+001B"],
    ["a DEL", "a\u007fb", "U+007F"],
    ["a euro sign", "5 €", "U+20AC"],
  ])("refuses --header with %s with exit 2, naming --header, and sends nothing", async (_label, value, code) => {
    const hook = await receiver();
    const result = await runSigned([...TRACK, "--url", hook.url, "--header", `X-Note: ${value}`], { cwd: await makeTempDir() });
    expectExit(result, 2);
    expect(result.stderr).toContain(`--header X-Note: header value must not contain ${code}`);
    expect(hook.requests).toHaveLength(0);
  });

  it("sends a header value with a tab as it is", async () => {
    const hook = await receiver();
    const result = await runSigned([...TRACK, "--url", hook.url, "--header", "X-Note: a\tb"], { cwd: await makeTempDir() });
    expectExit(result, 0);
    expect(hook.requests[0]?.headers["x-note"]).toBe("a\tb");
  });

  it("refuses a control character in a source's header in wh config validate", async () => {
    const dir = await makeTempDir();
    await writeFile(
      join(dir, ".whrc.json"),
      JSON.stringify({ sources: { web: { writeKey: "wk", webhooks: [{ url: "https://a.example.com/hook", headers: { "X-Team": "a\u0001b" } }] } } }),
    );
    const result = await runInProcess(["config", "validate"], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toContain('sources.web.webhooks[0].headers["X-Team"]: header value must not contain U+0001');
  });
});

describe("--prop, --trait and --context that would overwrite each other", () => {
  it.each([
    [["a=1", "a.b=2"], /--prop "a\.b=2" conflicts with --prop "a=1"/],
    [["a.b=2", "a=1"], /--prop "a=1" conflicts with --prop "a\.b=2"/],
    [["a=1", "a=2"], /--prop "a=2" conflicts with --prop "a=1"/],
  ])("refuses --prop %j with exit 2 and sends nothing", async (pairs, message) => {
    const hook = await receiver();
    const result = await runSigned([...TRACK, "--url", hook.url, ...pairs.flatMap((pair) => ["--prop", pair])], { cwd: await makeTempDir() });
    expectExit(result, 2);
    expect(result.stderr).toMatch(message);
    expect(hook.requests).toHaveLength(0);
  });
});

describe("a corrupt sync state is exit 2 naming the file, and nothing is sent", () => {
  it.each([
    [
      "values is an array",
      { "wh-sync-state": 1, kind: "audience", name: "VIP", trait: "vip", values: ["u9", "u8"] },
      /values is an array, not an object of userId: value/,
    ],
    [
      "a member's value is not true",
      { "wh-sync-state": 1, kind: "audience", name: "VIP", trait: "vip", values: { u1: "yes" } },
      /values\["u1"\] is "yes": an audience's state holds true for each member/,
    ],
    ["kind is missing", { "wh-sync-state": 1, name: "VIP", trait: "vip", values: {} }, /kind is missing/],
  ])("refuses a state whose %s", async (_label, state, message) => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, "members.txt"), "u1\nu2\n");
    await writeFile(join(dir, "state.json"), JSON.stringify(state));
    const result = await runSigned(["audience", "sync", "VIP", "--members", "members.txt", "--state", "state.json", "--url", hook.url], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toMatch(/--state .*state\.json: /);
    expect(result.stderr).toMatch(message);
    expect(hook.requests).toHaveLength(0);
    expect(JSON.parse(await readFile(join(dir, "state.json"), "utf8"))).toEqual(state);
  });
});

describe("--ca must hold certificates Node can read", () => {
  it.each([
    ["a PEM block of garbage", "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n", /--ca .*garbage\.pem: certificate 1 cannot be read/],
    ["a private key only", null, /--ca .*garbage\.pem: no PEM certificate in the file/],
  ])("refuses --ca with %s with exit 2 and sends nothing", async (_label, text, message) => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, "garbage.pem"), text ?? (await readFile(join(FIXTURES, "tls", "ca.key"))));
    const result = await runSigned([...TRACK, "--url", hook.url, "--ca", join(dir, "garbage.pem")], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toMatch(message);
    expect(hook.requests).toHaveLength(0);
  });

  it("refuses a bundle whose second certificate cannot be read, naming it", async () => {
    const dir = await makeTempDir();
    const good = await readFile(join(FIXTURES, "tls", "ca.crt"), "utf8");
    await writeFile(join(dir, "bundle.pem"), `${good}-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n`);
    const hook = await receiver();
    const result = await runSigned([...TRACK, "--url", hook.url, "--ca", join(dir, "bundle.pem")], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toMatch(/bundle\.pem: certificate 2 cannot be read/);
  });
});

describe("wh serve's CORS is for the tracking paths only", () => {
  it("answers /health and /metrics without CORS headers, and the tracking paths with them", async () => {
    const { wh } = await serve();
    for (const path of ["/health", "/metrics"]) {
      const response = await fetch(`${wh.url}${path}`, { headers: { origin: "https://evil.example" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("access-control-allow-origin"), path).toBeNull();
      await response.text();
    }
    const preflight = await fetch(`${wh.url}/health`, { method: "OPTIONS", headers: { origin: "https://evil.example" } });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    await preflight.text();
    const track = await post(wh.url, "/v1/track", JSON.stringify({ writeKey: "wk", userId: "u1", event: "E" }));
    expect(track.headers.get("access-control-allow-origin")).toBe("*");
    const trackPreflight = await fetch(`${wh.url}/v1/t`, { method: "OPTIONS", headers: { origin: "https://app.example" } });
    expect(trackPreflight.status).toBe(204);
    expect(trackPreflight.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("numbers JSON cannot carry exactly are refused, never rounded or turned into null", () => {
  const big = '{"type":"track","userId":"u1","event":"E","messageId":"m-big","properties":{"id":12345678901234567890}}';
  const huge = '{"type":"track","userId":"u2","event":"E","messageId":"m-huge","properties":{"x":1e400}}';

  it("dead-letters replay lines with 1e400 and 12345678901234567890, naming the line and the number, and delivers the rest", async () => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      `${trackLine("u0", "m0", { properties: { fine: 1.5, exp: 1e3, long: 0.30000000000000004 } })}\n${big}\n${huge}\n`,
    );
    const result = await runSigned(["replay", "events.ndjson", "--url", hook.url], { cwd: dir });
    expectExit(result, 1);
    expect(result.stderr).toMatch(/line 2: invalid: the number 12345678901234567890 cannot be sent exactly \(it would become 12345678901234567000\)/);
    expect(result.stderr).toMatch(/line 3: invalid: the number 1e400 cannot be sent exactly \(it would become null\)/);
    expect(hook.requests.map(messageIdOf)).toEqual(["m0"]);
    const records = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(records.map((record) => record.line)).toEqual([2, 3]);
  });

  it("sends an outbound line with --exact-bytes as it is, big number and all", async () => {
    const hook = await receiver();
    const dir = await makeTempDir();
    const line =
      '{"version":1,"type":"track","userId":"u1","event":"E","properties":{"id":12345678901234567890},"messageId":"m1","timestamp":"2026-11-21T09:30:08.276Z"}';
    await writeFile(join(dir, "events.ndjson"), `${line}\n`);
    const result = await runSigned(["replay", "events.ndjson", "--url", hook.url, "--exact-bytes"], { cwd: dir });
    expectExit(result, 0);
    expect(hook.requests[0]?.body.toString("utf8")).toBe(line);
    expect(hook.requests[0]?.headers["x-signature"]).toBe(hmacHex(SECRET, line));
  });

  it("refuses it in wh send --data (exit 2) and reports the line invalid in wh ingest", async () => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${big}\n`);
    const sent = await runSigned(["send", "track", "--data", big, "--url", hook.url], { cwd: dir });
    const ingested = await runInProcess(["ingest", "events.ndjson", "--endpoint", `http://127.0.0.1:${hook.port}`, "--write-key", "wk"], { cwd: dir });
    expectExit(sent, 2);
    expect(sent.stderr).toMatch(/--data: the number 12345678901234567890 cannot be sent exactly/);
    expectExit(ingested, 1);
    expect(ingested.stderr).toMatch(/line 1: invalid: the number 12345678901234567890 cannot be sent exactly/);
    expect(hook.requests).toHaveLength(0);
  });

  it("answers wh serve a body with such a number with 400", async () => {
    const { wh } = await serve();
    const answer = await post(wh.url, "/v1/track", '{"writeKey":"wk","userId":"u1","event":"E","properties":{"x":1e400}}');
    expect(answer.status).toBe(400);
    expect(answer.json.message).toMatch(/the number 1e400 cannot be sent exactly/);
  });
});
