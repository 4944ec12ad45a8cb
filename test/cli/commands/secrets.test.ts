import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordingServer } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { FIXTURES, hmacHex, lines, makeTempDir, removeTempDirs, type RunResult } from "../../helpers/run-wh.js";

/** Distinctive enough that any appearance in the output is a leak. */
const SECRET = "TOPSECRET-wh-1234";
const TOKEN = "TOPSECRET-token-5678";
const LEAK = /TOPSECRET/;

let server: RecordingServer;

beforeEach(async () => {
  server = await startRecordingServer();
});
afterEach(async () => {
  await server.close();
});
afterAll(removeTempDirs);

function expectNoLeak(result: Pick<RunResult, "stdout" | "stderr">): void {
  expect(result.stdout).not.toMatch(LEAK);
  expect(result.stderr).not.toMatch(LEAK);
}

async function restartServer(replies: number[]): Promise<void> {
  await server.close();
  server = await startRecordingServer({ replies });
}

const TRACK = ["send", "track", "--user-id", "u1", "--event", "Order Completed", "--retry-window", "1s"];

describe("the shared secret never appears in wh's output", () => {
  describe.each([
    ["--secret", async () => ({ args: ["--secret", SECRET], env: {}, cwd: await makeTempDir() })],
    ["WH_SHARED_SECRET", async () => ({ args: [], env: { WH_SHARED_SECRET: SECRET }, cwd: await makeTempDir() })],
    [
      "--secret-file",
      async () => {
        const cwd = await makeTempDir();
        await writeFile(join(cwd, "secret.txt"), `${SECRET}\n`);
        return { args: ["--secret-file", "secret.txt"], env: {}, cwd };
      },
    ],
    [
      "the config file",
      async () => {
        const cwd = await makeTempDir();
        // --url replaces these webhooks; the file's secret still signs.
        await writeFile(join(cwd, ".whrc.json"), JSON.stringify({ webhooks: [{ url: "http://127.0.0.1:9/replaced" }], sharedSecret: SECRET }));
        return { args: [], env: {}, cwd };
      },
    ],
  ] as const)("with the secret from %s", (_origin, setup) => {
    it.each([
      ["a delivered send", [200], []],
      ["a delivered send with --json", [200], ["--json"]],
      ["a send failed with 404", [404], []],
      ["a send failed with 404, with --json", [404], ["--json"]],
      ["a send whose retries ran out on 503", [503], []],
      ["a dry run", [200], ["--dry-run"]],
      ["a dry run with --json", [200], ["--dry-run", "--json"]],
    ] as const)("in %s", async (_name, replies, extra) => {
      await restartServer([...replies]);
      const { args, env, cwd } = await setup();
      const result = await runInProcess([...TRACK, "--url", server.url, "--header", `Authorization: Bearer ${TOKEN}`, ...args, ...extra], { env, cwd });
      expect(result.code).toBe(replies[0] === 200 ? 0 : 1);
      expectNoLeak(result);
      for (const request of server.requests) {
        expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
        expect(request.headers.authorization).toBe(`Bearer ${TOKEN}`);
      }
    });
  });

  it("in a send that cannot connect", async () => {
    const url = server.url;
    await server.close();
    const result = await runInProcess([...TRACK, "--url", url, "--secret", SECRET]);
    expect(result.code).toBe(1);
    expectNoLeak(result);
  });

  it("in a send refused for an invalid message", async () => {
    const result = await runInProcess(["send", "track", "--user-id", "u1", "--url", server.url, "--secret", SECRET]);
    expect(result.code).toBe(2);
    expectNoLeak(result);
  });

  it("in a URL's password, in a failed send", async () => {
    await restartServer([404]);
    const url = new URL(server.url);
    url.username = "user";
    url.password = SECRET;
    const human = await runInProcess([...TRACK, "--url", url.href]);
    expect(human.code).toBe(1);
    expectNoLeak(human);
    const json = await runInProcess([...TRACK, "--json", "--url", url.href]);
    expect(json.code).toBe(1);
    expectNoLeak(json);
  });

  it("in wh config show and config show --json, with the secret from the file or the environment", async () => {
    const cwd = await makeTempDir();
    await writeFile(
      join(cwd, ".whrc.json"),
      JSON.stringify({ webhooks: [{ url: "https://hooks.example.com/wh", headers: { Authorization: `Bearer ${TOKEN}` } }], sharedSecret: SECRET }),
    );
    const runs = [{}, { WH_SHARED_SECRET: `${SECRET}-env` }].flatMap((env) =>
      [[], ["--json"]].map((extra) => runInProcess(["config", "show", ...extra], { cwd, env })),
    );
    for (const result of await Promise.all(runs)) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("***");
      expectNoLeak(result);
    }
  });

  it("in wh config validate on a valid file", async () => {
    const result = await runInProcess(["config", "validate", "--config", join(FIXTURES, "config", "valid.whrc.json")]);
    expect(result.code).toBe(0);
    expectNoLeak(result);
  });

  it("in the problems of an invalid config file that holds the secret", async () => {
    const cwd = await makeTempDir();
    await writeFile(
      join(cwd, ".whrc.json"),
      JSON.stringify({
        webhooks: [{ url: "ftp://x", headers: { Authorization: `Bearer ${TOKEN}`, Host: SECRET } }],
        sharedSecret: SECRET,
        sharedSecrets: SECRET,
      }),
    );
    for (const result of await Promise.all([TRACK, ["config", "validate"], ["config", "show"]].map((argv) => runInProcess(argv, { cwd })))) {
      expect(result.code).toBe(2);
      expectNoLeak(result);
    }
  });

  it("in the error for a config file that is not valid JSON", async () => {
    const file = join(FIXTURES, "config", "invalid-syntax.whrc.json");
    for (const argv of [
      [...TRACK, "--config", file],
      ["config", "validate", "--config", file],
    ]) {
      const result = await runInProcess(argv);
      expect(result.code).toBe(2);
      expectNoLeak(result);
    }
  });

  it("in wh verify, matching or not, with --explain and --json", async () => {
    const body = '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}';
    const signature = hmacHex(SECRET, body);
    const wrong = hmacHex("other", body);
    const cases = [
      [signature, body, 0],
      [wrong, body, 1],
      [signature, `${body}\n`, 1],
      ["zz", body, 1],
    ] as const;
    const runs = cases.flatMap(([sig, input, code]) =>
      [[], ["--explain"], ["--json", "--explain"]].map(async (extra) => ({
        code,
        result: await runInProcess(["verify", "--secret", SECRET, "--signature", sig, ...extra], { input }),
      })),
    );
    for (const { code, result } of await Promise.all(runs)) {
      expect(result.code).toBe(code);
      expectNoLeak(result);
    }
  });

  it("in wh sign", async () => {
    const result = await runInProcess(["sign", "--json", "--secret", SECRET], { input: "{}" });
    expect(result.code).toBe(0);
    expectNoLeak(result);
  });

  it.each([[[]], [["--json"]]])("in a wh listen run %j", async (extra) => {
    const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET, ...extra]);
    try {
      if (extra.length > 0) await wh.waitForStdout((text) => text.includes("\n"));
      else await wh.waitForStderr((text) => /listening on http\S+/.test(text));
      const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(`${wh.stdout()}\n${wh.stderr()}`)?.[1] as string;
      const body = JSON.stringify({ version: 1, type: "identify", userId: "u1", traits: {}, messageId: "m-1", timestamp: "2026-11-21T09:30:08.276Z" });
      for (const signature of [hmacHex(SECRET, body), hmacHex("other", body)]) {
        const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-signature": signature }, body });
        await response.arrayBuffer();
      }
      await wh.waitForStdout((text) => lines(text).length >= (extra.length > 0 ? 3 : 2) && text.endsWith("\n"));
    } finally {
      wh.child.kill("SIGINT");
    }
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expectNoLeak(result);
  });

  it("in wh send delivered to wh listen", async () => {
    const wh = await startInProcess(["listen", "--port", "0", "--json"], { env: { WH_SHARED_SECRET: SECRET } });
    let sent: RunResult;
    try {
      const first = await wh.waitForStdout((text) => text.includes("\n"));
      const { listening } = JSON.parse(first.slice(0, first.indexOf("\n"))) as { listening: string };
      sent = await runInProcess([...TRACK, "--url", listening], { env: { WH_SHARED_SECRET: SECRET } });
      await wh.waitForStdout((text) => lines(text).length >= 2 && text.endsWith("\n"));
    } finally {
      wh.child.kill("SIGINT");
    }
    const listened = await wh.exited;
    expect(sent.code).toBe(0);
    expect(listened.code).toBe(0);
    expect(JSON.parse(lines(listened.stdout)[1] as string)).toMatchObject({ signature: "valid" });
    expectNoLeak(sent);
    expectNoLeak(listened);
  });
});
