import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { hmacHex, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// wh send and wh replay with subscriptions: each event once to each matching subscription, a
// failure that names the subscription, a dead letter that re-drives only there, a resume that
// sends nothing twice, batches by batch_keys, and a dry run that shows every request.

const server = closedAfterEach();
afterAll(removeTempDirs);
const SECRET = "subs-secret";

const subscription = (name: string, trigger: string, settings: Record<string, unknown>) => ({ name, actionSlug: "send", enabled: true, trigger, settings });

async function setup(receiver: RecordingServer, lines: readonly Record<string, unknown>[] = [], extra: Record<string, unknown>[] = []) {
  const dir = await makeTempDir();
  const subscriptions = [
    subscription("Tracks", 'type = "track"', { url: `${receiver.url}/a`, data: { "@path": "$.properties" } }),
    subscription("Orders", 'event = "Order Completed"', { url: `${receiver.url}/c`, method: "PUT", headers: { "X-Order": { "@path": "$.properties.id" } } }),
    ...extra,
  ];
  await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sharedSecret: SECRET, subscriptions }));
  await writeFile(join(dir, "events.ndjson"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
  return dir;
}

const order = (id: string, userId = "u1") => ({
  type: "track",
  userId,
  event: "Order Completed",
  properties: { id },
  messageId: `m-${id}`,
  timestamp: "2026-01-01T00:00:00.000Z",
});
const view = (id: string) => ({
  type: "track",
  userId: "u2",
  event: "Viewed",
  properties: { id },
  messageId: `v-${id}`,
  timestamp: "2026-01-01T00:00:00.000Z",
});
const records = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("wh send with subscriptions", () => {
  it("sends the message to each subscription its trigger matches, mapped and signed as each maps it", async () => {
    const receiver = await server();
    const dir = await setup(receiver);
    const result = await runInProcess(["--json", "send", "track", "--event", "Order Completed", "--prop", "id=o1", "--user-id", "u1"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const byPath = Object.fromEntries(receiver.requests.map((request) => [request.path, request]));
    expect(byPath["/hook/a"]?.body.toString()).toBe('{"id":"o1"}');
    expect(byPath["/hook/a"]?.headers["x-signature"]).toBe(hmacHex(SECRET, '{"id":"o1"}'));
    expect(byPath["/hook/c"]?.method).toBe("PUT");
    expect(byPath["/hook/c"]?.headers["x-order"]).toBe("o1");
    expect(records(result.stdout).map((record) => [record.subscription, record.outcome])).toEqual(
      expect.arrayContaining([
        ["Tracks", "delivered"],
        ["Orders", "delivered"],
      ]),
    );
  });

  it("--dry-run shows, per matching subscription, the mapped URL, method, headers, body and signature, and sends nothing", async () => {
    const receiver = await server();
    const dir = await setup(receiver);
    const result = await runInProcess(["--json", "send", "track", "--event", "Order Completed", "--prop", "id=o1", "--user-id", "u1", "--dry-run"], {
      cwd: dir,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(0);
    const shown = records(result.stdout);
    expect(shown.map((record) => [record.subscription, record.method, record.url])).toEqual([
      ["Tracks", "POST", `${receiver.url}/a`],
      ["Orders", "PUT", `${receiver.url}/c`],
    ]);
    expect(shown[0]).toMatchObject({ body: '{"id":"o1"}', signature: hmacHex(SECRET, '{"id":"o1"}') });
    expect(shown[1]?.headers).toMatchObject({ "X-Order": "o1" });
  });

  it("counts a message no trigger matches as matched no subscription (exit 0, nothing sent)", async () => {
    const receiver = await server();
    const result = await runInProcess(["--json", "send", "identify", "--user-id", "u1"], { cwd: await setup(receiver) });
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(0);
    expect(records(result.stdout)[0]).toMatchObject({ outcome: "skipped", reason: "matched no subscription" });
  });

  it("says a mapping that fails for this message is invalid, with Segment's reason, and still sends to the others", async () => {
    const receiver = await server();
    const strict = subscription("Strict", 'type = "track"', { url: { "@path": "$.properties.callback" } });
    const result = await runInProcess(["--json", "send", "track", "--event", "Viewed", "--prop", "id=v1", "--user-id", "u1"], {
      cwd: await setup(receiver, [], [strict]),
    });
    expect(result.code).toBe(1);
    expect(receiver.requests.map((request) => request.path)).toEqual(["/hook/a"]);
    expect(records(result.stdout)[0]).toMatchObject({ outcome: "invalid", subscriptions: ["Strict"] });
    expect(String(records(result.stdout)[0]?.reason)).toContain("The root value is missing the required field 'url'.");
  });
});

describe("wh replay with subscriptions", () => {
  it("dead-letters a failed subscription by name, and re-driving the dead letters sends only there", async () => {
    const receiver = await server({ replies: (request) => (request.path === "/hook/c" ? 404 : 200) });
    const dir = await setup(receiver, [order("o1"), view("v1")]);
    const first = await runInProcess(["replay", "events.ndjson"], { cwd: dir });
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('subscription "Orders"');
    const letters = records(await readFile(join(dir, "events.ndjson.failed.ndjson"), "utf8"));
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ line: 1, outcome: "failed", subscriptions: ["Orders"] });
    receiver.requests.splice(0);
    const again = await runInProcess(["replay", "events.ndjson.failed.ndjson", "--dead-letter", "again.ndjson"], { cwd: dir });
    expect(again.code).toBe(1);
    expect(receiver.requests.map((request) => request.path)).toEqual(["/hook/c"]);
  });

  it("a --resume of a completed run sends nothing again, and one with other subscriptions is refused", async () => {
    const receiver = await server();
    const dir = await setup(receiver, [order("o1"), order("o2"), view("v1")]);
    expect((await runInProcess(["replay", "events.ndjson"], { cwd: dir })).code).toBe(0);
    expect(receiver.requests).toHaveLength(5);
    const resumed = await runInProcess(["replay", "events.ndjson", "--resume"], { cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(5);
    // Other subscriptions are another destination: a resume is refused, naming both.
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ subscriptions: [subscription("Renamed", 'type = "track"', { url: `${receiver.url}/a` })] }));
    const changed = await runInProcess(["replay", "events.ndjson", "--resume"], { cwd: dir });
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain('delivered to subscriptions "Tracks", "Orders"; this one would deliver to subscriptions "Renamed"');
  });

  it("batches a batching subscription's events by their mapped batch_keys, in each user's order, up to batch_size", async () => {
    const receiver = await server();
    const batched = subscription("Batched", 'type = "track"', {
      url: { "@path": "$.properties.to" },
      data: { "@path": "$.properties" },
      enable_batching: true,
      batch_size: 2,
    });
    const lines = ["x", "y", "x", "x", "y"].map((to, index) => ({ ...view(`b${index}`), properties: { to: `${receiver.url}/${to}`, id: index } }));
    const dir = await makeTempDir();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ subscriptions: [batched] }));
    await writeFile(join(dir, "events.ndjson"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
    const result = await runInProcess(["replay", "events.ndjson"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const bodies = receiver.requests.map(
      (request) => `${request.path} ${(JSON.parse(request.body.toString()) as { id: number }[]).map((data) => data.id).join(",")}`,
    );
    expect(bodies.sort()).toEqual(["/hook/x 0,2", "/hook/x 3", "/hook/y 1,4"]);
  });

  it("--dry-run shows each request with its subscription and the matched-nothing lines as skipped", async () => {
    const receiver = await server();
    const dir = await setup(receiver, [order("o1"), { type: "identify", userId: "u1", messageId: "i1", timestamp: "2026-01-01T00:00:00.000Z" }]);
    const result = await runInProcess(["--json", "replay", "events.ndjson", "--dry-run"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(0);
    const shown = records(result.stdout);
    expect(shown.filter((record) => record.dryRun === true).map((record) => [record.line, record.subscription])).toEqual([
      [1, "Tracks"],
      [1, "Orders"],
    ]);
    expect(shown).toContainEqual(expect.objectContaining({ line: 2, outcome: "skipped", reason: "matched no subscription" }));
    expect(shown.find((record) => record.summary === true)).toMatchObject({ skipped: 1, dryRun: 1 });
    const text = await runInProcess(["replay", "events.ndjson", "--dry-run"], { cwd: dir });
    expect(text.stdout).toContain('# subscription "Orders" (line 1)\nPUT ');
    expect(text.stdout).toContain("line 2: skipped (matched no subscription)");
  });
});
