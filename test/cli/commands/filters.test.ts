import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import tsub from "@segment/tsub";
import { afterAll, describe, expect, it } from "vitest";
import { keptBySample } from "../../../src/core/destination/sample.js";
import { prepareMessage } from "../../../src/core/message/prepare.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { bodyOf, runSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

const receiver = closedAfterEach();
afterAll(removeTempDirs);

const event = (n: number, extra: Record<string, unknown> = {}) => ({
  type: "track",
  userId: `user-${n}`,
  event: n % 2 === 0 ? "Order Completed" : "Heartbeat",
  messageId: `m-${n}`,
  timestamp: "2026-11-21T09:30:08.276Z",
  properties: { plan: "pro", email: `u${n}@example.com`, price: n },
  context: { ip: "203.0.113.9" },
  ...extra,
});

async function dirWith(filters: unknown, events: object[]): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), JSON.stringify({ filters }));
  await writeFile(join(dir, "events.ndjson"), events.map((value) => `${JSON.stringify(value)}\n`).join(""));
  return dir;
}

const records = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("wh replay with destination filters", () => {
  it("does not send what a drop filter matches, counts it as filtered and names the filter", async () => {
    const dir = await dirWith(
      [{ if: "event = 'Heartbeat'", actions: [{ type: "DROP" }], enabled: true, title: "No heartbeats" }],
      [0, 1, 2, 3].map((n) => event(n)),
    );
    const server = await receiver();

    const text = await runSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });
    const json = await runSigned(["--json", "replay", "events.ndjson", "--url", server.url], { cwd: dir });

    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^2 delivered, 0 skipped by integrations, 2 filtered, 0 invalid, 0 failed in /m);
    expect(server.requests.map((request) => bodyOf(request).messageId)).toEqual(["m-0", "m-2", "m-0", "m-2"]);
    const skipped = records(json.stdout).filter((record) => record.outcome === "skipped");
    expect(skipped).toEqual([
      expect.objectContaining({ line: 2, outcome: "skipped", skip: "filtered", reason: 'the filter "No heartbeats" dropped it', messageId: "m-1" }),
      expect.objectContaining({ line: 4, outcome: "skipped", skip: "filtered", messageId: "m-3" }),
    ]);
    expect(records(json.stdout).at(-1)).toMatchObject({ summary: true, delivered: 2, skipped: 2, filtered: 2, unmatched: 0 });
  });

  it("keeps today's summary when nothing is filtered", async () => {
    const dir = await dirWith([{ if: "event = 'Nothing'", actions: [{ type: "drop" }] }], [event(0)]);
    const server = await receiver();
    const result = await runSigned(["replay", "events.ndjson", "--url", server.url], { cwd: dir });
    expect(result.stdout).toMatch(/^1 delivered, 0 skipped by integrations, 0 invalid, 0 failed in /m);
  });

  it("samples 50% on userId: exactly the users keptBySample keeps, in either mode", async () => {
    const events = Array.from({ length: 40 }, (_, n) => event(n));
    const dir = await dirWith([{ if: "all", actions: [{ type: "SAMPLE", percent: 0.5, path: "userId" }], title: "half the users" }], events);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--mode", "actions"], { cwd: dir });

    const expected = events.filter((value) => keptBySample(value.userId, 0.5)).map((value) => value.messageId);
    expect(expected.length).toBeGreaterThan(10);
    expect(expected.length).toBeLessThan(30);
    expect(server.requests.map((request) => bodyOf(request).messageId)).toEqual(expected);
    expect(result.stdout).toContain(`${40 - expected.length} filtered`);
  });

  it.each(["classic", "actions"] as const)("in %s mode, sends tsub's transform of the event, then shaped", async (mode) => {
    const fields = { drop: { properties: ["email"], context: ["ip"] }, allow: { properties: ["price", "email"] } };
    const filters = [
      { if: "type = 'track'", actions: [{ type: "ALLOW_PROPERTIES", fields: fields.allow }] },
      { if: "all", actions: [{ type: "DROP_PROPERTIES", fields: fields.drop }] },
    ];
    const dir = await dirWith(filters, [event(2)]);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--mode", mode], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    const cut = tsub.transform(event(2), [
      { type: "drop_properties", config: { drop: fields.drop } },
      { type: "allow_properties", config: { allow: fields.allow } },
    ]) as Record<string, unknown>;
    expect(cut.properties).toEqual({ price: 2 });
    const stamps = { now: () => new Date(0), newId: () => "unused" };
    const shaped = prepareMessage(cut, stamps, { mode });
    const received = bodyOf(server.requests[0]!);
    // actions mode fills receivedAt with the time of sending: compare the rest byte for byte.
    const { receivedAt: _sent, ...sent } = received;
    const { receivedAt: _expected, ...wanted } = JSON.parse(shaped.ok ? shaped.message.body : "{}") as Record<string, unknown>;
    expect(sent).toEqual(wanted);
  });

  it("journals a filtered line as finished: --resume sends nothing and still counts it filtered", async () => {
    const dir = await dirWith(
      [{ if: "event = 'Heartbeat'", actions: [{ type: "drop" }] }],
      [0, 1].map((n) => event(n)),
    );
    const server = await receiver();
    await runSigned(["replay", "events.ndjson", "--url", server.url, "--journal", "run.journal"], { cwd: dir });

    const resumed = await runSigned(["replay", "events.ndjson", "--url", server.url, "--journal", "run.journal", "--resume"], { cwd: dir });

    expect(resumed.stdout).toMatch(/complete already: 1 delivered, 0 skipped by integrations, 1 filtered, 0 invalid, 0 failed; nothing was sent/);
    expect(server.requests.length).toBe(1);
  });
});

describe("wh send with destination filters", () => {
  const DROP_HEARTBEATS = [{ if: "event = 'Heartbeat'", actions: [{ type: "DROP" }], title: "No heartbeats" }];
  const send = (event: string, ...more: string[]) => ["send", "track", "--event", event, "--user-id", "u1", "--url", "URL", ...more];

  it.each([[[]], [["--dry-run"]]])("%j: says the event was filtered and by which filter, and sends nothing", async (more) => {
    const dir = await dirWith(DROP_HEARTBEATS, []);
    const server = await receiver();
    const args = send("Heartbeat", ...more).map((arg) => (arg === "URL" ? server.url : arg));

    const text = await runSigned(args, { cwd: dir });
    const json = await runSigned(["--json", ...args], { cwd: dir });

    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.trim()).toBe('skipped track: the filter "No heartbeats" dropped it; nothing was sent');
    expect(json.code, json.stderr).toBe(0);
    expect(records(json.stdout)).toEqual([
      expect.objectContaining({ type: "track", outcome: "skipped", skip: "filtered", reason: 'the filter "No heartbeats" dropped it' }),
    ]);
    expect(server.requests).toEqual([]);
  });

  it("--dry-run shows the event the filters cut, as it would be sent", async () => {
    const dir = await dirWith([{ if: "all", actions: [{ type: "DROP_PROPERTIES", fields: { properties: ["email"] } }] }], []);
    const server = await receiver();
    const args = send("Signed Up", "--prop", "email=u1@example.com", "--prop", "plan=pro", "--dry-run").map((arg) => (arg === "URL" ? server.url : arg));

    const json = await runSigned(["--json", ...args], { cwd: dir });

    expect(json.code, json.stderr).toBe(0);
    const [shown] = records(json.stdout);
    expect(shown).toMatchObject({ dryRun: true });
    expect(JSON.parse(shown?.body as string)).toMatchObject({ event: "Signed Up", properties: { plan: "pro" } });
    expect(JSON.parse(shown?.body as string).properties).not.toHaveProperty("email");
    expect(server.requests).toEqual([]);
  });
});

describe("filters in the config: errors name the filter", () => {
  it.each([
    [{ if: 'userId = oops"', actions: [{ type: "DROP" }] }, /filters\[0\]\.if: not FQL that wh can run: the string at column 14 is not closed/],
    [{ if: "all", actions: [{ type: "DELETE" }] }, /filters\[0\]\.actions\[0\]\.type: "DELETE" is not a filter action/],
    [{ if: "all", actions: [{ type: "SAMPLE", percent: 1.5 }] }, /filters\[0\]\.actions\[0\]\.percent: must be between 0 and 1/],
    [{ if: "all", actions: [{ type: "DROP_PROPERTIES" }] }, /filters\[0\]\.actions\[0\]\.fields: a DROP_PROPERTIES action needs fields/],
  ])("refuses %j with exit 2", async (filter, message) => {
    const dir = await dirWith([filter], [event(0)]);
    const result = await runSigned(["replay", "events.ndjson", "--url", "http://127.0.0.1:9/"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
