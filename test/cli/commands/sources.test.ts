import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordedRequest, type RecordingServer } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult } from "../../helpers/run-wh.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRETS = { web: "s-web-8f2a", ios: "s-ios-41c7", old: "s-old-d09e" } as const;

let web: RecordingServer;
let ios: RecordingServer;
let old: RecordingServer;

beforeEach(async () => {
  [web, ios, old] = await Promise.all([startRecordingServer(), startRecordingServer(), startRecordingServer()]);
});
afterEach(async () => {
  await Promise.all([web.close(), ios.close(), old.close()]);
});
afterAll(removeTempDirs);

function threeSources(): Record<string, unknown> {
  return {
    sources: {
      web: { writeKey: "wk-web", webhooks: [{ url: web.url }], sharedSecret: SECRETS.web },
      ios: { webhooks: [{ url: ios.url, headers: { "X-Source": "ios" } }], sharedSecret: SECRETS.ios },
      old: { enabled: false, webhooks: [{ url: old.url }], sharedSecret: SECRETS.old },
    },
  };
}

/** A working directory holding .whrc.json with `config`. */
async function withConfig(config: Record<string, unknown>): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), `${JSON.stringify(config, null, 2)}\n`);
  return dir;
}

async function wh(args: readonly string[], config: Record<string, unknown> = threeSources()): Promise<RunResult> {
  return runInProcess(args, { cwd: await withConfig(config) });
}

function expectExit(result: RunResult, code: number): void {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(code);
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

function onlyRequest(server: RecordingServer): RecordedRequest {
  expect(server.requests).toHaveLength(1);
  return server.requests[0] as RecordedRequest;
}

function bodyOf(request: RecordedRequest): Record<string, unknown> {
  return JSON.parse(request.body.toString("utf8")) as Record<string, unknown>;
}

function expectDelete(request: RecordedRequest, userId: string, secret: string): void {
  expect(request.method).toBe("POST");
  const body = bodyOf(request);
  expect(Object.keys(body).sort()).toEqual(["timestamp", "type", "userId"]);
  expect(body.type).toBe("delete");
  expect(body.userId).toBe(userId);
  expect(body.timestamp).toMatch(ISO_MS);
  expect(request.headers["x-signature"]).toBe(hmacHex(secret, request.body));
}

describe("wh send delete across sources", () => {
  it("sends one delete to every enabled source, signed with each source's own secret, and none to a disabled one", async () => {
    const result = await wh(["send", "delete", "--user-id", "U"]);
    expectExit(result, 0);
    expectDelete(onlyRequest(web), "U", SECRETS.web);
    expectDelete(onlyRequest(ios), "U", SECRETS.ios);
    expect(old.requests).toHaveLength(0);
    expect(onlyRequest(ios).headers["x-source"]).toBe("ios");
    expect(onlyRequest(web).headers["x-source"]).toBeUndefined();
    expect(result.stdout).toContain("source web");
    expect(result.stdout).toContain("source ios");
    expect(result.stdout).not.toContain("source old");
  });

  it("reports each source as a JSON record with --json", async () => {
    const result = await wh(["send", "delete", "--user-id", "U", "--json"]);
    expectExit(result, 0);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((record) => record.source).sort()).toEqual(["ios", "web"]);
    for (const record of records) expect(record).toMatchObject({ type: "delete", outcome: "delivered" });
  });

  it("sends the delete only to the source --source names, with its secret", async () => {
    const result = await wh(["send", "delete", "--user-id", "U", "--source", "web"]);
    expectExit(result, 0);
    expectDelete(onlyRequest(web), "U", SECRETS.web);
    expect(ios.requests).toHaveLength(0);
    expect(old.requests).toHaveLength(0);
  });

  it("exits 1 when one source's URL fails, and the other source still gets its delete", async () => {
    await web.close();
    web = await startRecordingServer({ replies: [404] });
    const result = await wh(["send", "delete", "--user-id", "U", "--retry-window", "1s"]);
    expectExit(result, 1);
    expectDelete(onlyRequest(web), "U", SECRETS.web);
    expectDelete(onlyRequest(ios), "U", SECRETS.ios);
    expect(old.requests).toHaveLength(0);
    expect(result.stdout).toMatch(/failed.*source web|source web.*404/);
    expect(result.stdout).toMatch(/delivered.*source ios/);
  });

  it("refuses --source naming a disabled source with exit 2 and sends nothing", async () => {
    const result = await wh(["send", "delete", "--user-id", "U", "--source", "old"]);
    expectExit(result, 2);
    expect(result.stderr).toContain("old");
    expect(result.stderr).toMatch(/disabled/);
    expect(web.requests.length + ios.requests.length + old.requests.length).toBe(0);
  });
});

describe("--source for other commands", () => {
  it("asks for --source when several sources are configured, listing their names, with exit 2", async () => {
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U"]);
    expectExit(result, 2);
    expect(result.stderr).toContain("--source");
    for (const name of ["web", "ios", "old"]) expect(result.stderr).toContain(name);
    expect(web.requests.length + ios.requests.length + old.requests.length).toBe(0);
  });

  it("sends only to the source --source names, signed with its secret", async () => {
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U", "--source", "web"]);
    expectExit(result, 0);
    const request = onlyRequest(web);
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRETS.web, request.body));
    expect(bodyOf(request)).toMatchObject({ type: "track", event: "Signed Up", userId: "U" });
    expect(ios.requests).toHaveLength(0);
    expect(old.requests).toHaveLength(0);
  });

  it("refuses --source naming a disabled source with exit 2", async () => {
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U", "--source", "old"]);
    expectExit(result, 2);
    expect(result.stderr).toMatch(/disabled/);
    expect(old.requests).toHaveLength(0);
  });

  it("refuses an unknown --source with exit 2, naming the sources there are", async () => {
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U", "--source", "nope"]);
    expectExit(result, 2);
    expect(result.stderr).toContain("nope");
    for (const name of ["web", "ios", "old"]) expect(result.stderr).toContain(name);
    expect(web.requests.length + ios.requests.length + old.requests.length).toBe(0);
  });

  it("refuses --source when the config defines no sources, with exit 2", async () => {
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U", "--source", "web"], {
      webhooks: [{ url: web.url }],
      sharedSecret: SECRETS.web,
    });
    expectExit(result, 2);
    expect(web.requests).toHaveLength(0);
  });

  it("needs no flag with a single source", async () => {
    const config = { sources: { only: { webhooks: [{ url: ios.url }], sharedSecret: SECRETS.ios } } };
    const result = await wh(["send", "track", "--event", "Signed Up", "--user-id", "U"], config);
    expectExit(result, 0);
    const request = onlyRequest(ios);
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRETS.ios, request.body));
  });

  it("sends a delete to the single source without a flag", async () => {
    const config = { sources: { only: { webhooks: [{ url: ios.url }], sharedSecret: SECRETS.ios } } };
    const result = await wh(["send", "delete", "--user-id", "U"], config);
    expectExit(result, 0);
    expectDelete(onlyRequest(ios), "U", SECRETS.ios);
  });

  it("syncs an audience for the source --source names", async () => {
    const dir = await withConfig(threeSources());
    await writeFile(join(dir, "members.txt"), "u1\n");
    const result = await runInProcess(["audience", "sync", "Beta Testers", "--members", "members.txt", "--state", "state.json", "--source", "ios"], {
      cwd: dir,
    });
    expectExit(result, 0);
    const request = onlyRequest(ios);
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRETS.ios, request.body));
    expect(request.headers["x-source"]).toBe("ios");
    expect(bodyOf(request)).toMatchObject({ type: "identify", userId: "u1", traits: { beta_testers: true } });
    expect(web.requests).toHaveLength(0);
  });

  it("asks for --source in an audience sync when several sources are configured, and records nothing", async () => {
    const dir = await withConfig(threeSources());
    await writeFile(join(dir, "members.txt"), "u1\n");
    const result = await runInProcess(["audience", "sync", "Beta Testers", "--members", "members.txt", "--state", "state.json"], { cwd: dir });
    expectExit(result, 2);
    expect(result.stderr).toContain("--source");
    expect(web.requests.length + ios.requests.length + old.requests.length).toBe(0);
  });

  it("signs with the secret of the source --source names in wh sign", async () => {
    const dir = await withConfig(threeSources());
    const body = '{"type":"track","event":"x"}';
    await writeFile(join(dir, "body.json"), body);
    const result = await runInProcess(["sign", "--source", "ios", "body.json"], { cwd: dir });
    expectExit(result, 0);
    expect(result.stdout.trim()).toBe(hmacHex(SECRETS.ios, body));
    const webResult = await runInProcess(["sign", "--source", "web", "body.json"], { cwd: dir });
    expectExit(webResult, 0);
    expect(webResult.stdout.trim()).toBe(hmacHex(SECRETS.web, body));
  });

  it("refuses an unknown --source in wh sign with exit 2, naming the sources", async () => {
    const dir = await withConfig(threeSources());
    await writeFile(join(dir, "body.json"), "{}");
    const result = await runInProcess(["sign", "--source", "nope", "body.json"], { cwd: dir });
    expectExit(result, 2);
    expect(result.stdout).toBe("");
    for (const name of ["web", "ios", "old"]) expect(result.stderr).toContain(name);
  });

  it("refuses --source in wh sign when the config defines no sources, instead of signing with the flat secret", async () => {
    const dir = await withConfig({ webhooks: [{ url: web.url }], sharedSecret: SECRETS.web });
    await writeFile(join(dir, "body.json"), "{}");
    const result = await runInProcess(["sign", "--source", "nope", "body.json"], { cwd: dir });
    expectExit(result, 2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("nope");
  });
});

describe("wh config show with sources", () => {
  it("lists every source, marks the disabled one, and masks the secrets", async () => {
    const result = await wh(["config", "show"]);
    expectExit(result, 0);
    expect(result.stdout).toContain("source web");
    expect(result.stdout).toContain("source ios");
    expect(result.stdout).toMatch(/source old \(disabled\)/);
    expect(result.stdout).toContain(web.url);
    expect(result.stdout).toContain("***");
    for (const secret of Object.values(SECRETS)) {
      expect(result.stdout).not.toContain(secret);
      expect(result.stderr).not.toContain(secret);
    }
  });

  it("lists the sources as JSON with secrets masked", async () => {
    const result = await wh(["config", "show", "--json"]);
    expectExit(result, 0);
    const [record] = lines(result.stdout).map((line) => JSON.parse(line) as { destinations: { source: string; enabled: boolean; sharedSecret: unknown }[] });
    expect(record?.destinations.map((destination) => [destination.source, destination.enabled, destination.sharedSecret])).toEqual([
      ["web", true, "***"],
      ["ios", true, "***"],
      ["old", false, "***"],
    ]);
    for (const secret of Object.values(SECRETS)) expect(result.stdout).not.toContain(secret);
  });
});
