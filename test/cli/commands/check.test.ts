import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CASE_NAMES } from "../../../src/core/check/case-names.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import {
  answer,
  check,
  closeReceivers,
  correctlySigned,
  expectReserialisationAdvisory,
  hmac,
  outcomes,
  SECRET,
  startReceiver,
  verifying,
} from "./check-receivers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";
import { junitFailures } from "./junit-check.js";

// wh check against receivers written here, as a developer would write them: each fails exactly
// the cases it should, with the reason in the output.

afterEach(closeReceivers);
/** The cases of Segment's scheme, the default: the replay case is Standard Webhooks' (test/cli/commands/standard-webhooks.test.ts). */
const SEGMENT_CASES = CASE_NAMES.filter((name) => name !== "signature-replayed");
afterAll(removeTempDirs);

const correct = verifying(correctlySigned);

// Correct receivers written from Segment's own code (the sample of segment-docs' Webhooks page, an
// Express app, is in test-packages/frameworks/check-docs-sample.test.ts).

/**
 * (b) How action-destinations' own webhook test checks a signature (destinations/webhook/
 * __test__/webhook.test.ts): the body parsed as JSON, the HMAC-SHA1 of JSON.stringify of it, or
 * of its first element when it is an array (a batch), compared in constant time; 400 otherwise.
 */
const actionDestinationsTest = verifying(
  (body) => {
    const parsed = JSON.parse(body.toString("utf8")) as unknown;
    return JSON.stringify(Array.isArray(parsed) ? parsed[0] : parsed);
  },
  undefined,
  400,
);

/** (c) The raw bytes, as received, compared in constant time (a batch included: its whole body). */
const rawBytes = verifying((body) => body);

const CLASSIC_SKIPPED = ["batch"];
const ACTIONS_SKIPPED = ["delete"];
const SIGNATURE_CASES = ["signature-wrong", "signature-missing", "signature-reserialized", "signature-body-changed"];

describe("wh check: a correct receiver (raw bytes, constant-time comparison)", () => {
  it("passes every case in classic mode, exit 0, with a table", async () => {
    const receiver = await startReceiver(correct);
    const result = await check(receiver);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    for (const name of SEGMENT_CASES.filter((each) => !CLASSIC_SKIPPED.includes(each))) expect(result.stdout).toMatch(new RegExp(`✔ pass  ${name} `));
    expect(result.stdout).toContain("- skip  batch");
    expect(result.stdout).toMatch(/burst .*p50 \d+ms, p99 \d+ms \(advisory\)/);
    expect(result.stdout).toContain("17 passed, 0 failed, 1 skipped");
  });

  it("passes every case in actions mode, the batch signed over its first event included", async () => {
    const receiver = await startReceiver(correct);
    const result = await check(receiver, ["--mode", "actions", "--batch-size", "5", "--json"]);
    expect(result.code).toBe(0);
    expect(outcomes(result.stdout)).toEqual({ pass: SEGMENT_CASES.filter((name) => !ACTIONS_SKIPPED.includes(name)), skip: ACTIONS_SKIPPED });
    const summary = JSON.parse(result.stdout.trim().split("\n").at(-1) as string);
    expect(summary).toEqual({ summary: true, cases: SEGMENT_CASES.length, passed: SEGMENT_CASES.length - 1, failed: 0, warned: 0, skipped: 1, exitCode: 0 });
  });

  it("sends the independent cases side by side, --concurrency at once: a slow receiver costs about its slowest case, not the sum", async () => {
    let inFlight = 0;
    let most = 0;
    const timers = new Set<NodeJS.Timeout>();
    const receiver = await startReceiver((request, body, response) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      // About a second per answer, well within Segment's 5 s.
      const timer = setTimeout(() => {
        inFlight -= 1;
        correct(request, body, response);
      }, 1_000);
      timers.add(timer);
    });
    const result = await check(receiver, ["--skip", "burst", "--json"]);
    for (const timer of timers) clearTimeout(timer);
    expect(result.code).toBe(0);
    // One after another, never more than one request would have been in flight (the burst, which
    // sends 10 at once by itself, is skipped here).
    expect(most).toBe(10);
    // Shown in the cases' order whatever order they were answered in.
    const shown = result.stdout
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { case?: string }).case);
    expect(shown.filter((name) => name !== undefined)).toEqual(SEGMENT_CASES.filter((name) => name !== "burst"));
  });
});

describe("wh check: receivers written from Segment's documentation pass every required case", () => {
  it.each([
    ["(b) action-destinations' test verifier: JSON.stringify of the parsed body", () => startReceiver(actionDestinationsTest), true],
    ["(c) a raw-bytes verifier", () => startReceiver(rawBytes), false],
  ])("%s: exit 0", async (_name, start, reserialises) => {
    const receiver = await start();
    const result = await check(receiver, ["--json"]);
    expect(result.code, result.stdout).toBe(0);
    const by = outcomes(result.stdout);
    expect(by.fail).toBeUndefined();
    expect(by.warn).toEqual(reserialises ? ["unicode-escaped"] : undefined);
    if (!reserialises) return;
    // The advisory names what the receiver verifies, why it holds with Segment, and the risk.
    expectReserialisationAdvisory(result.stdout);
  });

  it("(b) in actions mode passes the batch too: it verifies the batch's first event", async () => {
    const receiver = await startReceiver(actionDestinationsTest);
    const result = await check(receiver, ["--mode", "actions", "--json"]);
    expect(result.code).toBe(0);
    expect(outcomes(result.stdout).fail).toBeUndefined();
  });

  it("(c) in actions mode fails the batch, told that a batch is signed over its first event and what to verify, not to check the secret", async () => {
    const receiver = await startReceiver(rawBytes);
    const result = await check(receiver, ["--mode", "actions", "--json"]);
    expect(result.code).toBe(1);
    expect(outcomes(result.stdout).fail).toEqual(["batch"]);
    const record = JSON.parse(result.stdout.split("\n").find((line) => line.includes('"case":"batch"')) as string);
    expect(record.reason).toMatch(/^refused the exact bytes \(HTTP 401: bad signature\) but accepted the same batch signed over its whole body/);
    expect(record.reason).toContain("an Actions batch is signed over its first event only");
    expect(record.reason).toContain("verify JSON.stringify(JSON.parse(rawBody)[0])");
    expect(record.reason).not.toContain("secret");
  });

  it("names the two messageIds of the retry: idempotency cannot be seen from outside", async () => {
    const receiver = await startReceiver(correct);
    let id = 0;
    const result = await check(receiver, ["--only", "retry", "--json"], { newId: () => `id-${++id}` });
    const record = JSON.parse(result.stdout.split("\n")[0] as string);
    expect(record).toMatchObject({ case: "retry", outcome: "pass", messageIds: ["id-1", "id-2"] });
    expect(record.note).toContain("idempotency cannot be seen from outside");
    expect(record.note).toMatch(/messageId id-1 \(sent twice.*messageId id-2/);
    expect(receiver.count()).toBe(3);
  });
});

describe("wh check: receivers that are wrong", () => {
  it("one that accepts any signature fails the four signature cases, each with its reason", async () => {
    const receiver = await startReceiver((_request, _body, response) => answer(response, 200, "ok"));
    const result = await check(receiver);
    expect(result.code).toBe(1);
    for (const name of SIGNATURE_CASES) expect(result.stdout).toMatch(new RegExp(`✖ FAIL  ${name} +HTTP 200`));
    expect(result.stdout).toContain("accepted a request signed with another secret: your receiver does not verify signatures (HTTP 200: ok)");
    expect(result.stdout).toContain("accepted a request without X-Signature");
    expect(result.stdout).toContain("accepted a body whose X-Signature was computed over different bytes");
    expect(result.stdout).toContain("accepted a body changed after it was signed");
    expect(result.stdout).toContain("13 passed, 4 failed, 1 skipped");
  });

  it("one that 500s on an alias fails the alias case only, its answer neutralised", async () => {
    const receiver = await startReceiver(
      verifying(correctlySigned, (_request, body, response) =>
        body.includes('"Previous ID"') ? answer(response, 500, "boom \u001b[2J\u001b]0;owned\u0007") : answer(response, 200),
      ),
    );
    const result = await check(receiver);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✖ FAIL {2}alias +HTTP 500/);
    expect(result.stdout).toContain("crashed (HTTP 500: boom \\x1b[2J\\x1b]0;owned\\x07): Segment retries a 5xx for up to 4 hours");
    expect(result.stdout).not.toContain("\u001b");
    expect(result.stdout).toContain("16 passed, 1 failed, 1 skipped");
  });

  it("one that refuses batches fails the batch case only (actions mode)", async () => {
    const receiver = await startReceiver(verifying(correctlySigned, (_request, body, response) => answer(response, body[0] === 0x5b ? 400 : 200)));
    const result = await check(receiver, ["--mode", "actions", "--json"]);
    expect(result.code).toBe(1);
    expect(outcomes(result.stdout).fail).toEqual(["batch"]);
    expect(result.stdout).toContain("refused it (HTTP 400): Segment does not retry a 4xx: the event would be lost");
  });

  it("one that answers after 6 s fails every case, naming the duplicates Segment would cause", async () => {
    const timers = new Set<NodeJS.Timeout>();
    const receiver = await startReceiver((_request, _body, response) => timers.add(setTimeout(() => answer(response, 200), 6_000)));
    let id = 0;
    // Segment's 5 s, shortened for the test (io.timings): the receiver is far slower either way.
    const result = await check(receiver, ["--json"], { timings: { checkTimeoutMs: 150 }, newId: () => `id-${++id}` });
    for (const timer of timers) clearTimeout(timer);
    expect(result.code).toBe(1);
    const by = outcomes(result.stdout);
    expect(by.fail).toEqual(SEGMENT_CASES.filter((name) => !CLASSIC_SKIPPED.includes(name) && name !== "burst" && name !== "unicode-escaped"));
    expect(by.warn).toEqual(["unicode-escaped", "burst"]);
    const identify = JSON.parse(result.stdout.split("\n")[0] as string);
    expect(identify.reason).toBe(
      "no answer within 150ms: Segment gives up at 150ms and sends the event again, so your receiver would get messageId id-1 twice or more (a duplicate for every retry until it answers in time)",
    );
    expect(result.stdout).toContain("refuse a request that fails verification at once, with a 4xx");
  });
});

describe("wh check --junit", () => {
  it("writes JUnit XML that parses, with the failures and their reasons, and never the secret", async () => {
    const receiver = await startReceiver((_request, _body, response) => answer(response, 200, `<ok & "fine">`));
    const dir = await makeTempDir();
    const result = await check(receiver, ["--junit", "report.xml"], { cwd: dir });
    expect(result.code).toBe(1);
    const xml = readFileSync(join(dir, "report.xml"), "utf8");
    expect(xml).not.toContain(SECRET);
    const failures = junitFailures(xml);
    expect(failures.map((failure) => failure.name)).toEqual(SIGNATURE_CASES);
    expect(failures[0]?.message).toContain('does not verify signatures (HTTP 200: <ok & "fine">)');
    expect(xml).toMatch(/<testsuite name="wh check http:\/\/127\.0\.0\.1:\d+\/hook \(classic\)" tests="18" failures="4" errors="0" skipped="1"/);
  });
});

describe("wh check: a receiver that cannot be reached", () => {
  it("fails the first case with the connection error and skips the rest, saying why", async () => {
    const receiver = await startReceiver(correct);
    await receiver.close();
    const result = await check(receiver, ["--json"]);
    expect(result.code).toBe(1);
    const by = outcomes(result.stdout);
    expect(by.fail).toEqual(["identify"]);
    expect(by.skip).toHaveLength(SEGMENT_CASES.length - 1);
    expect(result.stdout).toMatch(/"reason":"no answer: nothing is listening on 127\.0\.0\.1:\d+ \(connection refused\)"/);
    expect(result.stdout).toMatch(/"case":"track".*"reason":"not sent: the receiver could not be reached \(nothing is listening on 127\.0\.0\.1:\d+/);
  });
});

describe("wh check interrupted", () => {
  it("stops at Ctrl-C with exit 130, grades nothing half-answered, and writes no JUnit report", async () => {
    const receiver = await startReceiver(() => undefined); // never answers
    const dir = await makeTempDir();
    const wh = await startInProcess(["check", receiver.url, "--secret", SECRET, "--junit", "report.xml"], { cwd: dir });
    await expect.poll(() => receiver.count()).toBe(1);
    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("interrupted after 0 of 18 cases; report.xml was not written");
    expect(result.stdout).not.toContain("FAIL");
    expect(readdirSync(dir).filter((name) => name.includes("report"))).toEqual([]);
  });
});

describe("wh check without a secret, and --dry-run", () => {
  it("skips the signature cases with one line saying why, and sends the others unsigned", async () => {
    const receiver = await startReceiver((request, _body, response) => answer(response, request.headers["x-signature"] === undefined ? 200 : 400));
    const result = await runInProcess(["check", receiver.url]);
    expect(result.code).toBe(0);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("no shared secret: requests are sent unsigned and the signature cases are skipped");
    for (const name of SIGNATURE_CASES) expect(result.stdout).toContain(`- skip  ${name}`);
    expect(result.stdout).toContain("12 passed, 0 failed, 6 skipped");
  });

  it("--dry-run lists every case with its exact bytes and headers, signature but never the secret, and sends nothing", async () => {
    const receiver = await startReceiver(correct);
    const result = await check(receiver, ["--dry-run", "--json"]);
    expect(result.code).toBe(0);
    expect(receiver.count()).toBe(0);
    expect(result.stdout).not.toContain(SECRET);
    const records = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(new Set(records.map((record) => record.case))).toEqual(new Set(SEGMENT_CASES));
    const unicode = records.filter((record) => record.case === "unicode-escaped");
    expect(unicode[0].body).toContain("https:\\/\\/example.com\\/menu");
    expect(unicode[0].body).toContain("brûl\\u00e9e");
    expect(unicode[0].body).toContain("\\u003cb\\u003eTom \\u0026 Jerry");
    expect(unicode[0].headers["X-Signature"]).toBe(hmac(unicode[0].body).toString("hex"));
    expect(JSON.parse(unicode[0].body)).toEqual(JSON.parse(unicode[1].body));
    expect(unicode[1]).toMatchObject({ probe: true });
    const batch = records.find((record) => record.case === "batch");
    expect(batch).toEqual({ dryRun: true, case: "batch", skipped: "the classic destination never sends batches (--mode actions)" });
  });
});

describe("wh check: bad usage exits 2 and sends nothing", () => {
  it.each([
    [["not a url"], '"not a url" is not an absolute URL'],
    [["ftp://127.0.0.1/hook"], '"ftp://127.0.0.1/hook" is not an http or https URL'],
    [["URL", "--only", "alias,aliass"], '--only: no case is named "aliass" (did you mean alias?)'],
    [["URL", "--skip", "nope"], '--skip: no case is named "nope"'],
    [["URL", "--only", "alias", "--skip", "alias"], "--only and --skip leave no case to run"],
    [["URL", "--secret-file", "missing.txt"], "--secret-file missing.txt: no such file"],
    [["URL", "--batch-size", "4"], "--batch-size: only the Actions destination sends batches: add --mode actions"],
    [["URL", "--mode", "actions", "--batch-size", "1"], '--batch-size "1": expected a whole number from 2 to 4000'],
    [["URL", "--junit", "no/such/dir/report.xml"], "--junit"],
  ])("wh check %j", async (args, message) => {
    const receiver = await startReceiver(correct);
    const result = await runInProcess(["check", ...args.map((arg) => (arg === "URL" ? receiver.url : arg))]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(receiver.count()).toBe(0);
  });

  it("names the known cases when one is unknown", async () => {
    const result = await runInProcess(["check", "http://127.0.0.1:9/hook", "--only", "nope"]);
    expect(result.stderr).toContain(`the cases are: ${CASE_NAMES.join(", ")}`);
  });

  it("a secret file that cannot be read is a usage error", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "secret.txt"), "");
    const result = await runInProcess(["check", "http://127.0.0.1:9/hook", "--secret-file", "secret.txt"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--secret-file secret.txt: the file is empty");
  });
});
