import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordedRequest, type RecordingServer } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE, type RunResult } from "../../helpers/run-wh.js";

const SECRET = "s3cret-sync";
const AUDIENCE = "High-Value Users (EU)";
const AUDIENCE_TRAIT = "high_value_users_eu";
const LTV = "Lifetime Value";
const LTV_TRAIT = "lifetime_value";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const receiver = closedAfterEach();
afterAll(removeTempDirs);

interface Identify {
  version: number;
  type: string;
  userId: string;
  traits: Record<string, unknown>;
  messageId: string;
  timestamp: string;
}

function bodyOf(request: RecordedRequest): Identify {
  return JSON.parse(request.body.toString("utf8")) as Identify;
}

/** userId → the trait value each request carried, in arrival order (a retried user appears more than once). */
function sent(server: RecordingServer, trait: string): [string, unknown][] {
  return server.requests.map((request) => {
    const body = bodyOf(request);
    return [body.userId, body.traits[trait]];
  });
}

/** userId → trait value, one entry per user, sorted by userId: what the receiver was told. */
function sentOnce(server: RecordingServer, trait: string): Record<string, unknown> {
  const entries = sent(server, trait);
  const byUser = Object.fromEntries(entries);
  expect(Object.keys(byUser)).toHaveLength(entries.length);
  return sortKeys(byUser);
}

function sortKeys(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function userIdOf(request: RecordedRequest): string {
  return bodyOf(request).userId;
}

interface StateFile {
  "wh-sync-state": number;
  kind: string;
  name: string;
  trait: string;
  values: Record<string, unknown>;
}

async function readState(path: string): Promise<StateFile> {
  return JSON.parse(await readFile(path, "utf8")) as StateFile;
}

async function stateValues(path: string): Promise<Record<string, unknown>> {
  return sortKeys((await readState(path)).values);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function members(...userIds: string[]): string {
  return userIds.map((userId) => `${userId}\n`).join("");
}

function range(count: number, prefix = "u"): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}${String(index + 1).padStart(3, "0")}`);
}

function trueFor(userIds: string[]): Record<string, unknown> {
  return sortKeys(Object.fromEntries(userIds.map((userId) => [userId, true])));
}

/** A temporary working directory with a members or values file; runs wh there with the secret in the environment. */
async function workspace() {
  const dir = await makeTempDir();
  const statePath = join(dir, "state.json");
  return {
    dir,
    statePath,
    write: (name: string, text: string | Buffer) => writeFile(join(dir, name), text),
    audience: (server: RecordingServer, extra: readonly string[] = [], name = AUDIENCE): Promise<RunResult> =>
      runInProcess(["audience", "sync", name, "--members", "members.txt", "--state", "state.json", "--url", server.url, ...extra], {
        cwd: dir,
        env: { WH_SHARED_SECRET: SECRET },
      }),
    traits: (server: RecordingServer, file: string, extra: readonly string[] = []): Promise<RunResult> =>
      runInProcess(["traits", "sync", LTV, "--values", file, "--state", "state.json", "--url", server.url, ...extra], {
        cwd: dir,
        env: { WH_SHARED_SECRET: SECRET },
      }),
  };
}

function expectExit(result: RunResult, code: number): void {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(code);
  expect(result.stderr).not.toMatch(STACK_TRACE);
}

describe("wh audience sync: the first sync", () => {
  it("sends one signed identify with { trait: true } per member, exits 0 and records the members", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u3"));
    const result = await ws.audience(server);
    expectExit(result, 0);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["u1", "u2", "u3"]));
    for (const request of server.requests) {
      expect(request.method).toBe("POST");
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
      const body = bodyOf(request);
      expect(body.version).toBe(1);
      expect(body.type).toBe("identify");
      expect(body.traits).toEqual({ [AUDIENCE_TRAIT]: true });
      expect(body.messageId).toMatch(UUID);
      expect(body.timestamp).toMatch(ISO_MS);
    }
    const state = await readState(ws.statePath);
    expect(state).toMatchObject({ "wh-sync-state": 1, kind: "audience", name: AUDIENCE, trait: AUDIENCE_TRAIT });
    expect(sortKeys(state.values)).toEqual(trueFor(["u1", "u2", "u3"]));
    expect(result.stdout).toContain("3 delivered");
    expect(result.stderr).toContain(AUDIENCE_TRAIT);
  });

  it("gives each identify its own messageId", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members(...range(20)));
    expectExit(await ws.audience(server), 0);
    expect(new Set(server.requests.map((request) => bodyOf(request).messageId)).size).toBe(20);
  });

  it("sends each member once when the members file lists a user twice", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u1"));
    expectExit(await ws.audience(server), 0);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["u1", "u2"]));
  });

  it("reads NDJSON members", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", '{"userId":"n1","email":"a@example.com"}\n\n{"userId":"n2"}\n');
    expectExit(await ws.audience(server), 0);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["n1", "n2"]));
  });

  it("reads CSV members with a userId column among others", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", 'email,userId,name\na@example.com,c1,"Smith, ""Jo"""\nb@example.com,c2,Lee\n');
    expectExit(await ws.audience(server), 0);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["c1", "c2"]));
  });

  it("keeps the state in <trait>.wh-state.json in the working directory when --state is absent", async () => {
    const server = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, "members.txt"), members("u1"));
    const result = await runInProcess(["audience", "sync", AUDIENCE, "--members", "members.txt", "--url", server.url], {
      cwd: dir,
      env: { WH_SHARED_SECRET: SECRET },
    });
    expectExit(result, 0);
    expect(await stateValues(join(dir, `${AUDIENCE_TRAIT}.wh-state.json`))).toEqual(trueFor(["u1"]));
  });
});

describe("wh audience sync: later syncs", () => {
  it("sends true for users who joined, false for users who left, and nothing for the unchanged", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u3", "u4"));
    expectExit(await ws.audience(first), 0);

    const second = await receiver();
    await ws.write("members.txt", members("u1", "u2", "u5", "u6"));
    const result = await ws.audience(second);
    expectExit(result, 0);
    expect(sentOnce(second, AUDIENCE_TRAIT)).toEqual({ u3: false, u4: false, u5: true, u6: true });
    for (const request of second.requests) expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1", "u2", "u5", "u6"]));
    expect(result.stdout).toContain("4 delivered");
  });

  it("sends nothing and exits 0 when membership has not changed", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    expectExit(await ws.audience(first), 0);
    const before = await readFile(ws.statePath, "utf8");

    const second = await receiver();
    await ws.write("members.txt", members("u2", "u1"));
    const result = await ws.audience(second);
    expectExit(result, 0);
    expect(second.requests).toHaveLength(0);
    expect(result.stdout).toContain("0 delivered");
    expect(JSON.parse(await readFile(ws.statePath, "utf8"))).toEqual(JSON.parse(before));
  });

  it("sends false to every member when the audience becomes empty", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    expectExit(await ws.audience(first), 0);
    const second = await receiver();
    await ws.write("members.txt", "");
    expectExit(await ws.audience(second), 0);
    expect(sentOnce(second, AUDIENCE_TRAIT)).toEqual({ u1: false, u2: false });
    expect(await stateValues(ws.statePath)).toEqual({});
  });
});

describe("wh audience sync: failures", () => {
  it("exits 1 against a failing endpoint, keeps the state as it was, and sends the same changes next time", async () => {
    const good = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u3"));
    expectExit(await ws.audience(good), 0);
    const before = await readFile(ws.statePath, "utf8");

    await ws.write("members.txt", members("u2", "u3", "u4", "u5"));
    const failing = await receiver({ replies: [500] });
    const failed = await ws.audience(failing, ["--retry-window", "1s"]);
    expectExit(failed, 1);
    expect(failed.stdout).toContain("3 failed");
    expect(failed.stdout).toContain("sent again by the next sync");
    expect(new Set(failing.requests.map(userIdOf))).toEqual(new Set(["u1", "u4", "u5"]));
    expect(await readFile(ws.statePath, "utf8")).toBe(before);

    const recovered = await receiver();
    expectExit(await ws.audience(recovered), 0);
    expect(sentOnce(recovered, AUDIENCE_TRAIT)).toEqual({ u1: false, u4: true, u5: true });
    expect(sortKeys(Object.fromEntries(sent(failing, AUDIENCE_TRAIT)))).toEqual({ u1: false, u4: true, u5: true });
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u2", "u3", "u4", "u5"]));
  });

  it("records no member when the first sync fails, and sends them all next time", async () => {
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    const failing = await receiver({ replies: [500] });
    expectExit(await ws.audience(failing, ["--retry-window", "1s"]), 1);
    if (await exists(ws.statePath)) expect(await stateValues(ws.statePath)).toEqual({});
    const good = await receiver();
    expectExit(await ws.audience(good), 0);
    expect(sentOnce(good, AUDIENCE_TRAIT)).toEqual(trueFor(["u1", "u2"]));
  });

  it("advances the state only for the users whose identify was delivered; the next sync sends just the rest", async () => {
    const refused = new Set(["u2", "u4"]);
    const partial = await receiver({ replies: (request) => (refused.has(userIdOf(request)) ? 503 : 200) });
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u3", "u4", "u5"));
    const result = await ws.audience(partial, ["--retry-window", "1s"]);
    expectExit(result, 1);
    expect(result.stdout).toContain("3 delivered");
    expect(result.stdout).toContain("2 failed");
    // The first failure is named whole, then identical ones are counted (--json names each user).
    expect(result.stderr).toMatch(/user u[24]: failed: .* → HTTP 503/);
    expect(result.stderr).toContain("✗ 2 events failed the same way");
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1", "u3", "u5"]));

    const good = await receiver();
    expectExit(await ws.audience(good), 0);
    expect(sentOnce(good, AUDIENCE_TRAIT)).toEqual(trueFor(["u2", "u4"]));
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1", "u2", "u3", "u4", "u5"]));
  });

  it("keeps a user who left in the state when the false was not delivered, and sends the false again", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    expectExit(await ws.audience(first), 0);
    await ws.write("members.txt", members("u1"));
    const refusing = await receiver({ replies: [400] });
    expectExit(await ws.audience(refusing), 1);
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1", "u2"]));
    const good = await receiver();
    expectExit(await ws.audience(good), 0);
    expect(sentOnce(good, AUDIENCE_TRAIT)).toEqual({ u2: false });
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1"]));
  });
});

describe("wh audience sync: an interrupted sync", () => {
  it("exits 130 on Ctrl-C with only delivered users in the state, and the next sync completes the rest", async () => {
    const all = range(300);
    let reachMidway: () => void = () => undefined;
    const midway = new Promise<void>((resolve) => {
      reachMidway = resolve;
    });
    const slow = await receiver({
      replies: (_request, index) => {
        if (index === 39) reachMidway();
        return { status: 200, delayMs: 20 };
      },
    });
    const ws = await workspace();
    await ws.write("members.txt", members(...all));
    const wh = await startInProcess(
      ["audience", "sync", AUDIENCE, "--members", "members.txt", "--state", "state.json", "--url", slow.url, "--concurrency", "4"],
      {
        cwd: ws.dir,
        env: { WH_SHARED_SECRET: SECRET },
      },
    );
    await midway;
    wh.child.kill("SIGINT");
    const interrupted = await wh.exited;
    expectExit(interrupted, 130);
    expect(interrupted.stdout).toContain("sent again by the next sync");

    const firstRun = new Set(slow.requests.map(userIdOf));
    const recorded = Object.keys((await readState(ws.statePath)).values);
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.length).toBeLessThan(all.length);
    for (const userId of recorded) expect(firstRun.has(userId), `${userId} is in the state but was never received`).toBe(true);

    const good = await receiver();
    const completed = await ws.audience(good);
    expectExit(completed, 0);
    const secondRun = good.requests.map(userIdOf);
    const notRecorded = all.filter((userId) => !recorded.includes(userId));
    expect([...secondRun].sort()).toEqual(notRecorded);
    const received = new Set([...firstRun, ...secondRun]);
    for (const userId of all) expect(received.has(userId), `${userId} was never received`).toBe(true);
    expect(await stateValues(ws.statePath)).toEqual(trueFor(all));
  });
});

describe("wh audience sync: bad input", () => {
  it("refuses the state file of another audience with exit 2 and sends nothing", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1"));
    expectExit(await ws.audience(first), 0);
    const before = await readFile(ws.statePath, "utf8");
    const second = await receiver();
    const result = await ws.audience(second, [], "Churn Risk");
    expectExit(result, 2);
    expect(result.stderr).toContain("state.json");
    expect(result.stderr).toContain(AUDIENCE);
    expect(second.requests).toHaveLength(0);
    expect(await readFile(ws.statePath, "utf8")).toBe(before);
  });

  it("refuses a corrupt state file with exit 2, naming the file, and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1"));
    await ws.write("state.json", '{"wh-sync-state":1,"values":{"u1":tr');
    const result = await ws.audience(server);
    expectExit(result, 2);
    expect(result.stderr).toContain("state.json");
    expect(server.requests).toHaveLength(0);
    expect(await readFile(ws.statePath, "utf8")).toBe('{"wh-sync-state":1,"values":{"u1":tr');
  });

  it("refuses a members file with a bad line with exit 2, naming the line, and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", '{"userId":"u1"}\n{"email":"x@example.com"}\n');
    const result = await ws.audience(server);
    expectExit(result, 2);
    expect(result.stderr).toContain("members.txt line 2");
    expect(server.requests).toHaveLength(0);
    expect(await exists(ws.statePath)).toBe(false);
  });

  it("refuses a missing members file with exit 2", async () => {
    const server = await receiver();
    const ws = await workspace();
    const result = await ws.audience(server);
    expectExit(result, 2);
    expect(result.stderr).toContain("members.txt");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a name with no letters or digits with exit 2", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1"));
    const result = await ws.audience(server, [], "!!!");
    expectExit(result, 2);
    expect(server.requests).toHaveLength(0);
  });
});

describe("wh audience sync and wh traits sync: CSV files", () => {
  it("reads a quoted line break as part of its cell, and names the line each record starts on", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.csv", 'userId,note\r\nq1,"first line\r\nsecond line"\r\n"q\n2",x\r\n\r\nq3,"a, ""b"""\r\n');
    expectExit(await ws.audience(server, ["--members", "members.csv"]), 0);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["q\n2", "q1", "q3"]));
    const bad = await receiver();
    await ws.write("members.csv", 'userId,note\nq1,"two\nlines"\n\n,"no user, and\na line break"\nq4,x\n');
    const result = await ws.audience(bad, ["--members", "members.csv"]);
    expectExit(result, 2);
    expect(result.stderr).toContain("members.csv line 5: no userId");
    expect(bad.requests).toHaveLength(0);
  });

  it("refuses a quote that is never closed with exit 2, naming the line it opens on, and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.csv", 'userId,note\nq1,x\nq2,"never closed\nq3,y\nq4,z\n');
    const result = await ws.audience(server, ["--members", "members.csv"]);
    expectExit(result, 2);
    expect(result.stderr).toMatch(/members\.csv line 3: .*quote/);
    expect(server.requests).toHaveLength(0);
    expect(await exists(ws.statePath)).toBe(false);
  });

  it("keeps values that JSON would change as text, as --trait does, and reads the rest as JSON", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("ltv.csv", 'userId,value\nu1,1.10\nu2,1e3\nu3,18446744073709551616\nu4,-0\nu5,42\nu6,2.5\nu7,"[1,2]"\nu8,"two\nlines"\nu9,007\n');
    expectExit(await ws.traits(server, "ltv.csv"), 0);
    expect(sentOnce(server, LTV_TRAIT)).toEqual({
      u1: "1.10",
      u2: "1e3",
      u3: "18446744073709551616",
      u4: "-0",
      u5: 42,
      u6: 2.5,
      u7: [1, 2],
      u8: "two\nlines",
      u9: "007",
    });
    expect(server.requests.some((request) => request.body.toString("utf8").includes(`"${LTV_TRAIT}":"18446744073709551616"`))).toBe(true);
  });

  it("refuses a member whose identify would be over 32 KB as an invalid message, exits 1, and sends the others", async () => {
    const server = await receiver();
    const ws = await workspace();
    const big = "b".repeat(40_000);
    await ws.write("members.csv", `userId\nu1\n${big}\nu3\n`);
    const result = await ws.audience(server, ["--members", "members.csv"]);
    expectExit(result, 1);
    expect(sentOnce(server, AUDIENCE_TRAIT)).toEqual(trueFor(["u1", "u3"]));
    expect(result.stderr).toMatch(/invalid: message is \d+ bytes of JSON; the limit is 32000 bytes/);
    expect(result.stderr).toContain(`user ${"b".repeat(80)}… (40000 characters): invalid`);
    expect(result.stderr.length).toBeLessThan(5_000);
    expect(await stateValues(ws.statePath)).toEqual(trueFor(["u1", "u3"]));
  });

  it.each(["members.csv", "members.txt"])("refuses a 30 MB member in %s with exit 2, naming its line, and sends nothing", async (file) => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write(file, `userId\nu1\n${"h".repeat(30_000_000)}\nu3\n`);
    const result = await ws.audience(server, ["--members", file]);
    expectExit(result, 2);
    expect(result.stderr).toContain(`${file} line 3: `);
    expect(result.stderr).toContain("1 MiB");
    expect(result.stderr.length).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(0);
    expect(await exists(ws.statePath)).toBe(false);
  });

  it("refuses a 30 MB line of an NDJSON members file with exit 2, naming it, and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", `{"userId":"u1"}\n{"userId":"${"h".repeat(30_000_000)}"}\n{"userId":"u3"}\n`);
    const result = await ws.audience(server);
    expectExit(result, 2);
    expect(result.stderr).toContain("members.txt line 2: ");
    expect(result.stderr).toContain("1 MiB");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a CSV cell that is not UTF-8 with exit 2, naming its line, and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.csv", Buffer.concat([Buffer.from("userId\nu1\n"), Buffer.from([0x75, 0xff, 0x32]), Buffer.from("\nu3\n")]));
    const result = await ws.audience(server, ["--members", "members.csv"]);
    expectExit(result, 2);
    expect(result.stderr).toContain("members.csv line 3: not valid UTF-8");
    expect(server.requests).toHaveLength(0);
  });
});

describe("wh traits sync", () => {
  it("sends { snake_name: value } with numbers as numbers and text as text", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("ltv.csv", "userId,value\nu1,100\nu2,250.5\nu3,gold\nu4,true\n");
    const result = await ws.traits(server, "ltv.csv");
    expectExit(result, 0);
    expect(sentOnce(server, LTV_TRAIT)).toEqual({ u1: 100, u2: 250.5, u3: "gold", u4: true });
    const raw = server.requests.map((request) => request.body.toString("utf8"));
    expect(raw.some((body) => body.includes(`"traits":{"${LTV_TRAIT}":100}`))).toBe(true);
    expect(raw.some((body) => body.includes(`"traits":{"${LTV_TRAIT}":250.5}`))).toBe(true);
    for (const request of server.requests) {
      expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
      expect(bodyOf(request).type).toBe("identify");
      expect(Object.keys(bodyOf(request).traits)).toEqual([LTV_TRAIT]);
    }
    const state = await readState(ws.statePath);
    expect(state).toMatchObject({ kind: "trait", name: LTV, trait: LTV_TRAIT });
    expect(sortKeys(state.values)).toEqual({ u1: 100, u2: 250.5, u3: "gold", u4: true });
  });

  it("sends only the changed and new values on the next run, and leaves users missing from the file alone", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("ltv.csv", "userId,value\nu1,100\nu2,250\nu3,gold\nu4,7\n");
    expectExit(await ws.traits(first, "ltv.csv"), 0);
    const second = await receiver();
    await ws.write("ltv.csv", "userId,value\nu1,100\nu2,300\nu3,gold\nu5,1\n");
    const result = await ws.traits(second, "ltv.csv");
    expectExit(result, 0);
    expect(sentOnce(second, LTV_TRAIT)).toEqual({ u2: 300, u5: 1 });
    expect(await stateValues(ws.statePath)).toEqual({ u1: 100, u2: 300, u3: "gold", u4: 7, u5: 1 });
    const third = await receiver();
    expectExit(await ws.traits(third, "ltv.csv"), 0);
    expect(third.requests).toHaveLength(0);
  });

  it("reads NDJSON values of any JSON type and compares them as JSON", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("ltv.ndjson", '{"userId":"u1","value":{"tier":"gold","score":9}}\n{"userId":"u2","value":[1,2]}\n{"userId":"u3","value":"100"}\n');
    expectExit(await ws.traits(first, "ltv.ndjson"), 0);
    expect(sentOnce(first, LTV_TRAIT)).toEqual({ u1: { tier: "gold", score: 9 }, u2: [1, 2], u3: "100" });
    const second = await receiver();
    await ws.write("ltv.ndjson", '{"userId":"u1","value":{"tier":"gold","score":9}}\n{"userId":"u2","value":[1,2,3]}\n{"userId":"u3","value":100}\n');
    expectExit(await ws.traits(second, "ltv.ndjson"), 0);
    expect(sentOnce(second, LTV_TRAIT)).toEqual({ u2: [1, 2, 3], u3: 100 });
  });

  it("refuses a values line without a value with exit 2 and sends nothing", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("ltv.csv", "userId,value\nu1,100\nu2\n");
    const result = await ws.traits(server, "ltv.csv");
    expectExit(result, 2);
    expect(result.stderr).toContain("ltv.csv line 3: no value for u2");
    expect(server.requests).toHaveLength(0);
  });

  it("keeps the last delivered value when a change fails, and sends it again next time", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("ltv.csv", "userId,value\nu1,100\nu2,200\n");
    expectExit(await ws.traits(first, "ltv.csv"), 0);
    await ws.write("ltv.csv", "userId,value\nu1,150\nu2,250\n");
    const partial = await receiver({ replies: (request) => (userIdOf(request) === "u1" ? 400 : 200) });
    expectExit(await ws.traits(partial, "ltv.csv"), 1);
    expect(await stateValues(ws.statePath)).toEqual({ u1: 100, u2: 250 });
    const good = await receiver();
    expectExit(await ws.traits(good, "ltv.csv"), 0);
    expect(sentOnce(good, LTV_TRAIT)).toEqual({ u1: 150 });
  });
});

describe("wh audience sync --dry-run and --json", () => {
  it("sends nothing and creates no state file with --dry-run, printing each request", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    const result = await ws.audience(server, ["--dry-run"]);
    expectExit(result, 0);
    expect(server.requests).toHaveLength(0);
    expect(await exists(ws.statePath)).toBe(false);
    expect(result.stdout).toContain(`POST ${server.url}`);
    expect(result.stdout).toContain(`"traits":{"${AUDIENCE_TRAIT}":true}`);
    expect(result.stdout).toContain('"userId":"u1"');
    expect(result.stdout).toContain('"userId":"u2"');
    expect(result.stdout).not.toContain(SECRET);
  });

  it("leaves an existing state file untouched with --dry-run and shows only the changes", async () => {
    const first = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2"));
    expectExit(await ws.audience(first), 0);
    const before = await readFile(ws.statePath, "utf8");
    const inodeBefore = (await stat(ws.statePath)).ino;

    const second = await receiver();
    await ws.write("members.txt", members("u2", "u3"));
    const result = await ws.audience(second, ["--dry-run", "--json"]);
    expectExit(result, 0);
    expect(second.requests).toHaveLength(0);
    expect(await readFile(ws.statePath, "utf8")).toBe(before);
    expect((await stat(ws.statePath)).ino).toBe(inodeBefore);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    const shown = records.filter((record) => record.dryRun === true).map((record) => JSON.parse(record.body as string) as Identify);
    expect(sortKeys(Object.fromEntries(shown.map((body) => [body.userId, body.traits[AUDIENCE_TRAIT]])))).toEqual({ u1: false, u3: true });
    const summary = records.at(-1);
    expect(summary).toMatchObject({ summary: true, dryRun: 2, delivered: 0, failed: 0 });
  });

  it("prints only JSON lines on stdout with --json, one per user and a final summary", async () => {
    const server = await receiver({ replies: (request) => (userIdOf(request) === "u2" ? 400 : 200) });
    const ws = await workspace();
    await ws.write("members.txt", members("u1", "u2", "u3"));
    const result = await ws.audience(server, ["--json"]);
    expectExit(result, 1);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.length).toBeGreaterThan(1);
    const summary = records.at(-1) as Record<string, unknown>;
    expect(summary).toMatchObject({ summary: true, delivered: 2, failed: 1, trait: AUDIENCE_TRAIT });
    expect(records.filter((record) => record.summary === true)).toHaveLength(1);
    const perUser = records.filter((record) => record.summary !== true);
    expect(sortKeys(Object.fromEntries(perUser.map((record) => [record.userId as string, record.outcome])))).toEqual({
      u1: "delivered",
      u2: "failed",
      u3: "delivered",
    });
    for (const record of perUser) expect(record).toMatchObject({ change: "joined", value: true, type: "identify" });
  });
});

describe("wh audience sync with subscriptions", () => {
  it("sends each identify to the subscriptions whose trigger matches, as each maps it, and records the members", async () => {
    const server = await receiver();
    const ws = await workspace();
    await ws.write("members.txt", "u1\nu2\n");
    const subscription = (name: string, trigger: string, path: string, data: Record<string, unknown>) => ({
      name,
      actionSlug: "send",
      enabled: true,
      trigger,
      settings: { url: `${server.url}${path}`, data },
    });
    await ws.write(
      "subs.json",
      JSON.stringify([
        subscription("Members", 'type = "identify"', "/members", { user: { "@path": "$.userId" }, member: { "@path": `$.traits.${AUDIENCE_TRAIT}` } }),
        subscription("Orders", 'event = "Order Completed"', "/orders", { "@path": "$." }),
      ]),
    );
    const result = await runInProcess(["audience", "sync", AUDIENCE, "--members", "members.txt", "--state", "state.json", "--subscriptions", "subs.json"], {
      cwd: ws.dir,
      env: { WH_SHARED_SECRET: SECRET },
    });

    expectExit(result, 0);
    const received = server.requests.map((request) => [request.path, request.body.toString("utf8")]).sort();
    expect(received).toEqual([
      ["/hook/members", '{"user":"u1","member":true}'],
      ["/hook/members", '{"user":"u2","member":true}'],
    ]);
    for (const request of server.requests) expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
    const state = JSON.parse(await readFile(ws.statePath, "utf8")) as Record<string, unknown>;
    expect(JSON.stringify(state)).toContain("u1");
    expect(JSON.stringify(state)).toContain("u2");
  });
});
