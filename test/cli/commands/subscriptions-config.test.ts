import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// A config's subscriptions as Segment's Public API holds them: the example of issue 35 works, and
// each mistake is refused before anything is sent (exit 2), naming the subscription and the field.

const server = closedAfterEach();
afterAll(removeTempDirs);

const EVENTS = [
  { type: "track", userId: "u1", event: "Order Completed", properties: { total: 5 }, messageId: "m1", timestamp: "2026-01-01T00:00:00.000Z" },
  { type: "identify", userId: "u1", traits: { name: "Ada" }, messageId: "m2", timestamp: "2026-01-01T00:00:00.000Z" },
  { type: "group", userId: "u1", groupId: "g1", messageId: "m3", timestamp: "2026-01-01T00:00:00.000Z" },
];

const tracks = (url: string) => ({
  name: "Tracks",
  actionSlug: "send",
  enabled: true,
  trigger: 'type = "track"',
  settings: { url: `${url}/a`, method: "POST", data: { "@path": "$.properties" } },
});
const people = (url: string) => ({
  name: "People",
  actionSlug: "send",
  enabled: true,
  trigger: 'type = "identify" or type = "page"',
  settings: { url: `${url}/b`, data: { "@path": "$." } },
});

async function replay(config: unknown, args: readonly string[] = [], files: Record<string, unknown> = {}) {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), JSON.stringify(config));
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), JSON.stringify(content));
  await writeFile(join(dir, "events.ndjson"), EVENTS.map((event) => `${JSON.stringify(event)}\n`).join(""));
  return runInProcess(["replay", "events.ndjson", ...args], { cwd: dir });
}

describe("subscriptions in the config", () => {
  it("delivers the example of issue 35: each event to the enabled subscriptions its trigger matches, the rest matched no subscription", async () => {
    const receiver = await server();
    const disabled = { ...tracks(receiver.url), name: "Off", enabled: false, settings: { url: `${receiver.url}/off` } };
    const result = await replay({ mode: "actions", sharedSecret: "s3cret", subscriptions: [tracks(receiver.url), people(receiver.url), disabled] }, ["--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests.map((request) => `${request.path} ${request.body}`).sort()).toEqual([
      '/hook/a {"total":5}',
      expect.stringMatching(/^\/hook\/b \{"type":"identify","userId":"u1","traits":\{"name":"Ada"\}/),
    ]);
    expect(result.stdout).toContain('{"line":3,"outcome":"skipped","skip":"unmatched","type":"group","messageId":"m3","reason":"matched no subscription"}');
  });

  it("takes the Public API's whole answer, in the config or with --subscriptions FILE", async () => {
    const receiver = await server();
    const answer = { data: { subscriptions: [{ id: "sub1", actionId: "a1", ...tracks(receiver.url) }] } };
    expect((await replay({ subscriptions: answer })).code).toBe(0);
    const fromFile = await replay({}, ["--subscriptions", "subscriptions.json"], { "subscriptions.json": answer });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(2);
  });

  it.each([
    ["a bad FQL trigger", { ...tracks("http://127.0.0.1:9"), trigger: 'type * "track"' }, 'subscriptions[0] ("Tracks").trigger: not valid FQL'],
    [
      "an unknown directive",
      { ...tracks("http://127.0.0.1:9"), settings: { url: "http://127.0.0.1:9", data: { "@oops": "x" } } },
      'subscriptions[0] ("Tracks").settings: /data has an invalid directive: @oops.',
    ],
    ["a missing url", { ...tracks("http://127.0.0.1:9"), settings: { data: { "@path": "$." } } }, 'subscriptions[0] ("Tracks").settings.url: missing'],
    [
      "an unknown setting",
      { ...tracks("http://127.0.0.1:9"), settings: { url: "http://127.0.0.1:9", body: {} } },
      'subscriptions[0] ("Tracks").settings.body: unknown setting',
    ],
    ["another action", { ...tracks("http://127.0.0.1:9"), actionSlug: "post" }, 'subscriptions[0] ("Tracks").actionSlug: must be "send"'],
  ])("refuses %s, naming the subscription and the field (exit 2)", async (_what, subscription, message) => {
    const receiver = await server();
    const result = await replay({ subscriptions: [people(receiver.url), subscription].reverse() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(receiver.requests).toHaveLength(0);
  });

  it("refuses six subscriptions: a destination has at most five", async () => {
    const six = ["A", "B", "C", "D", "E", "F"].map((name) => ({ ...tracks("http://127.0.0.1:9"), name }));
    const result = await replay({ subscriptions: six });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('subscriptions[5] ("F"): 6 subscriptions given; a destination has at most 5');
  });

  it("names the file of --subscriptions FILE in its errors", async () => {
    const result = await replay({}, ["--subscriptions", "mine.json"], { "mine.json": [{ ...tracks("http://127.0.0.1:9"), trigger: "typo" }] });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("mine.json");
    expect(result.stderr).toContain('subscriptions[0] ("Tracks").trigger: not valid FQL');
  });

  it("refuses --url with subscriptions, which give the URLs, and subscriptions beside webhooks or in classic mode", async () => {
    const withUrl = await replay({ subscriptions: [tracks("http://127.0.0.1:9")] }, ["--url", "http://127.0.0.1:9/x"]);
    expect(withUrl.code).toBe(2);
    expect(withUrl.stderr).toContain("--url cannot be used with subscriptions");
    const both = await replay({ webhooks: [{ url: "http://127.0.0.1:9/x" }], mode: "classic", subscriptions: [tracks("http://127.0.0.1:9")] });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("use either subscriptions");
    expect(both.stderr).toContain("mode must be actions");
  });

  it("wh config validate checks triggers and mappings with Segment's engines; wh config show lists the subscriptions", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ subscriptions: [{ ...tracks("http://127.0.0.1:9"), trigger: "typo" }] }));
    const invalid = await runInProcess(["config", "validate"], { cwd: dir });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('subscriptions[0] ("Tracks").trigger: not valid FQL');
    await writeFile(
      join(dir, ".whrc.json"),
      JSON.stringify({ subscriptions: [tracks("http://127.0.0.1:9"), { ...people("http://127.0.0.1:9"), enabled: false }] }),
    );
    expect((await runInProcess(["config", "validate"], { cwd: dir })).code).toBe(0);
    const shown = await runInProcess(["config", "show"], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('subscription "Tracks": type = "track"');
    expect(shown.stdout).toContain('subscription "People": type = "identify" or type = "page" (disabled)');
  });
});
