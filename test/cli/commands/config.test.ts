import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startRecordingServer, type RecordedRequest, type RecordingServer, serverForEachTest } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { FIXTURES, hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";

const CONFIGS = join(FIXTURES, "config");
const TRACK = ["send", "track", "--user-id", "u1", "--event", "Order Completed", "--retry-window", "1s"];

let server: RecordingServer;

/** A fresh recording server for each test of the describe block that calls this. */
const useServer = (): void => serverForEachTest((started) => (server = started));

afterAll(removeTempDirs);

/** A temp working directory holding `.whrc.json` with this content. */
async function dirWithConfig(config: unknown, name = ".whrc.json"): Promise<string> {
  const cwd = await makeTempDir();
  await writeFile(join(cwd, name), JSON.stringify(config, null, 2));
  return cwd;
}

function onlyRequest(target: RecordingServer = server): RecordedRequest {
  expect(target.requests).toHaveLength(1);
  return target.requests[0] as RecordedRequest;
}

describe("config: where settings come from", () => {
  useServer();

  it("finds .whrc.json in the working directory and delivers to its webhooks with its secret and headers", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url, headers: { "X-Team": "growth" } }], sharedSecret: "file-secret" });
    const result = await runInProcess(TRACK, { cwd });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("file-secret", request.body));
    expect(request.headers["x-team"]).toBe("growth");
  });

  it("finds the wh key of package.json", async () => {
    const cwd = await makeTempDir();
    await writeFile(
      join(cwd, "package.json"),
      JSON.stringify({ name: "app", private: true, wh: { webhooks: [{ url: server.url }], sharedSecret: "pkg-secret" } }),
    );
    const result = await runInProcess(TRACK, { cwd });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("pkg-secret", request.body));
  });

  it("uses the file named by --config, relative to the working directory", async () => {
    const cwd = await makeTempDir();
    await mkdir(join(cwd, "ci"));
    await writeFile(join(cwd, "ci", "hooks.json"), JSON.stringify({ webhooks: [{ url: server.url }], sharedSecret: "ci-secret" }));
    const result = await runInProcess([...TRACK, "--config", "ci/hooks.json"], { cwd });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("ci-secret", request.body));
  });

  it("prefers --config over a .whrc.json it would have found", async () => {
    const other = await startRecordingServer();
    try {
      const cwd = await dirWithConfig({ webhooks: [{ url: other.url }] });
      await writeFile(join(cwd, "chosen.json"), JSON.stringify({ webhooks: [{ url: server.url }] }));
      const result = await runInProcess([...TRACK, "--config", "chosen.json"], { cwd });
      expect(result.code).toBe(0);
      onlyRequest();
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it("replaces the file's URLs with --url", async () => {
    const fileServer = await startRecordingServer();
    try {
      const cwd = await dirWithConfig({ webhooks: [{ url: fileServer.url }], sharedSecret: "file-secret" });
      const result = await runInProcess([...TRACK, "--url", server.url], { cwd });
      expect(result.code).toBe(0);
      expect(fileServer.requests).toHaveLength(0);
      const request = onlyRequest();
      expect(request.headers["x-signature"]).toBe(hmacHex("file-secret", request.body));
    } finally {
      await fileServer.close();
    }
  });

  it("signs with the file's sharedSecret when the file has no webhooks and --url gives the URL", async () => {
    const cwd = await dirWithConfig({ sharedSecret: "file-secret" });
    const result = await runInProcess([...TRACK, "--url", server.url], { cwd });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("file-secret", request.body));
  });

  it("signs with WH_SHARED_SECRET rather than the file's sharedSecret", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url }], sharedSecret: "file-secret" });
    const result = await runInProcess(TRACK, { cwd, env: { WH_SHARED_SECRET: "env-secret" } });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("env-secret", request.body));
  });

  it("signs with --secret-file rather than WH_SHARED_SECRET", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url }], sharedSecret: "file-secret" });
    await writeFile(join(cwd, "secret.txt"), "flag-file-secret\n");
    const result = await runInProcess([...TRACK, "--secret-file", "secret.txt"], { cwd, env: { WH_SHARED_SECRET: "env-secret" } });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("flag-file-secret", request.body));
  });

  it("signs with --secret rather than WH_SHARED_SECRET", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url }], sharedSecret: "file-secret" });
    const result = await runInProcess([...TRACK, "--secret", "flag-secret"], { cwd, env: { WH_SHARED_SECRET: "env-secret" } });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-signature"]).toBe(hmacHex("flag-secret", request.body));
  });

  it("sends no X-Signature when no secret is set anywhere", async () => {
    const result = await runInProcess([...TRACK, "--url", server.url]);
    expect(result.code).toBe(0);
    expect(onlyRequest().headers["x-signature"]).toBeUndefined();
  });

  it("adds --header to the file's headers", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url, headers: { "X-Team": "growth" } }] });
    const result = await runInProcess([...TRACK, "--header", "X-Env: staging"], { cwd });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers["x-team"]).toBe("growth");
    expect(request.headers["x-env"]).toBe("staging");
  });
});

describe.concurrent("config: invalid files exit 2 with `path: problem`", () => {
  const cases: [string, string, string[]][] = [
    ["six webhooks", "six-webhooks.whrc.json", ["webhooks[5]: ", "at most 5"]],
    ["a relative URL", "relative-url.whrc.json", ["webhooks[0].url: ", "/hooks/wh", "absolute"]],
    ["an ftp:// URL", "ftp-url.whrc.json", ["webhooks[0].url: ", "ftp://files.example.com/wh", "http"]],
    ["a header name with a space", "header-name-space.whrc.json", ['webhooks[0].headers["X Team"]: ', "header name"]],
    ["a header value with CR/LF", "header-value-crlf.whrc.json", ["webhooks[0].headers.Team: ", "CR, LF"]],
    ["an owned User-Agent header", "owned-user-agent.whrc.json", ['webhooks[0].headers["User-Agent"]: ', "set by wh"]],
    ["an owned X-Signature header", "owned-x-signature.whrc.json", ['webhooks[0].headers["X-Signature"]: ', "set by wh"]],
    ["an owned Host header", "owned-host.whrc.json", ["webhooks[0].headers.Host: ", "set by wh"]],
    ["an unknown top-level key", "unknown-key.whrc.json", ["webhook: unknown key"]],
    ["an unknown key in a webhook", "unknown-webhook-key.whrc.json", ["webhooks[0].secret: unknown key"]],
  ];

  it.each(cases)("refuses %s in wh send", async (_name, file, expected) => {
    const result = await runInProcess([...TRACK, "--config", join(CONFIGS, file), "--secret", "s"]);
    expect(result.code).toBe(2);
    for (const text of expected) expect(result.stderr).toContain(text);
    expect(result.stderr).toContain(file);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.stdout).toBe("");
  });

  it.each(cases)("refuses %s in wh config validate", async (_name, file, expected) => {
    const result = await runInProcess(["config", "validate", "--config", join(CONFIGS, file)]);
    expect(result.code).toBe(2);
    for (const text of expected) expect(result.stderr).toContain(text);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("refuses a file that is not valid JSON, naming the file", async () => {
    const result = await runInProcess([...TRACK, "--config", join(CONFIGS, "invalid-syntax.whrc.json")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("invalid-syntax.whrc.json");
    expect(result.stderr).toMatch(/JSON/);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("refuses a .whrc.json that is not valid JSON when it is found by search", async () => {
    const cwd = await makeTempDir();
    await writeFile(join(cwd, ".whrc.json"), '{ "webhooks": [ { "url": "http://127.0.0.1:1/" } ');
    const result = await runInProcess(TRACK, { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(".whrc.json");
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("refuses a --config file that does not exist", async () => {
    const result = await runInProcess([...TRACK, "--config", "nowhere/.whrc.json"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("nowhere/.whrc.json");
    expect(result.stderr).toMatch(/no such file/i);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });
});

// Every kind of file docs/cli.md names, found by search: YAML, CommonJS and ES modules each take
// another loader (an ES module config is imported, never required).
describe.concurrent("config: every format found by search", () => {
  const url = "https://found.example.com/wh";
  const formats: [name: string, files: Record<string, string>][] = [
    [".whrc (YAML)", { ".whrc": `webhooks:\n  - url: ${url}\n` }],
    [".whrc.yaml", { ".whrc.yaml": `sharedSecret: yaml-secret\nwebhooks:\n  - url: ${url}\n` }],
    [".whrc.yml", { ".whrc.yml": `webhooks:\n  - url: ${url}\n` }],
    ["wh.config.cjs", { "wh.config.cjs": `module.exports = { webhooks: [{ url: ${JSON.stringify(url)} }] };\n` }],
    ["wh.config.mjs", { "wh.config.mjs": `export default { webhooks: [{ url: ${JSON.stringify(url)} }] };\n` }],
    [
      "wh.config.js in a CommonJS package",
      { "package.json": '{"name":"app"}', "wh.config.js": `module.exports = { webhooks: [{ url: ${JSON.stringify(url)} }] };\n` },
    ],
    [
      "wh.config.js in an ES module package",
      { "package.json": '{"name":"app","type":"module"}', "wh.config.js": `export default { webhooks: [{ url: ${JSON.stringify(url)} }] };\n` },
    ],
  ];

  it.each(formats)("reads %s", async (_name, files) => {
    const cwd = await makeTempDir();
    for (const [name, content] of Object.entries(files)) await writeFile(join(cwd, name), content);
    const found = Object.keys(files).find((name) => name !== "package.json") as string;
    const result = await runInProcess(["--json", "config", "show"], { cwd });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const shown = JSON.parse(result.stdout) as { configFile: string; destinations: { webhooks: { url: string }[] }[] };
    expect(shown.configFile).toBe(join(cwd, found));
    expect(shown.destinations[0]?.webhooks.map((hook) => hook.url)).toEqual([url]);
  });

  it("names the line and column of a YAML syntax error, without quoting the file", async () => {
    const cwd = await makeTempDir();
    await writeFile(join(cwd, ".whrc.yaml"), `sharedSecret: TOPSECRET\nwebhooks:\n  - url: ${url}\n   bad: [\n`);
    const result = await runInProcess(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(join(cwd, ".whrc.yaml"));
    expect(result.stderr).toMatch(/not valid YAML \(line \d+, column \d+\)/);
    expect(result.stderr).not.toContain("TOPSECRET");
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("says what a JavaScript config threw", async () => {
    const cwd = await makeTempDir();
    await writeFile(join(cwd, "wh.config.mjs"), 'throw new Error("no URL for this environment");\n');
    const result = await runInProcess(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(join(cwd, "wh.config.mjs"));
    expect(result.stderr).toContain("threw Error: no URL for this environment");
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });
});

describe("config: an invalid found file stops delivery", () => {
  useServer();

  it("refuses an unknown key found by search, naming it", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url }], retries: 3 });
    const result = await runInProcess(TRACK, { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("retries: unknown key");
    expect(server.requests).toHaveLength(0);
  });

  it("sends nothing when the found config file is invalid", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: server.url, headers: { Host: "evil.example.com" } }] });
    const result = await runInProcess(TRACK, { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("webhooks[0].headers.Host: ");
    expect(server.requests).toHaveLength(0);
  });
});

describe("config: invalid flags exit 2 and send nothing", () => {
  useServer();

  it("refuses --url ftp://x", async () => {
    const result = await runInProcess([...TRACK, "--url", server.url, "--url", "ftp://x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--url");
    expect(result.stderr).toContain("ftp://x");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a relative --url", async () => {
    const result = await runInProcess([...TRACK, "--url", "/hook"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--url");
    expect(result.stderr).toContain("/hook");
  });

  it("refuses six --url flags", async () => {
    const urls = [1, 2, 3, 4, 5, 6].flatMap((n) => ["--url", `${server.url}/${n}`]);
    const result = await runInProcess([...TRACK, ...urls]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("at most 5");
    expect(server.requests).toHaveLength(0);
  });

  it("accepts five --url flags", async () => {
    const urls = [1, 2, 3, 4, 5].flatMap((n) => ["--url", `${server.url}/${n}`]);
    const result = await runInProcess([...TRACK, ...urls]);
    expect(result.code).toBe(0);
    expect(server.requests.length).toBeGreaterThanOrEqual(1);
  });

  it.each(["Host: x", "User-Agent: curl/8", "X-Signature: abc", "content-type: text/plain"])("refuses --header '%s', a header wh owns", async (header) => {
    const result = await runInProcess([...TRACK, "--url", server.url, "--header", header]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--header");
    expect(result.stderr).toContain(header.slice(0, header.indexOf(":")));
    expect(result.stderr).toContain("set by wh");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses --header 'bad', which has no colon", async () => {
    const result = await runInProcess([...TRACK, "--url", server.url, "--header", "bad"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--header");
    expect(result.stderr).toContain("bad");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a --header name with a space", async () => {
    const result = await runInProcess([...TRACK, "--url", server.url, "--header", "X Team: growth"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("X Team");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a --timeout that is not a duration", async () => {
    const result = await runInProcess([...TRACK, "--url", server.url, "--timeout", "soon"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--timeout");
    expect(server.requests).toHaveLength(0);
  });
});

describe.concurrent("wh config show", () => {
  const valid = join(CONFIGS, "valid.whrc.json");

  it("prints the settings with the secret and the Authorization value masked", async () => {
    const result = await runInProcess(["config", "show", "--config", valid]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("https://hooks.example.com/wh");
    expect(result.stdout).toContain("http://backup.example.com:8080/wh");
    expect(result.stdout).toContain("X-Team: growth");
    expect(result.stdout).toContain("Authorization: ***");
    expect(result.stdout).toContain("***");
    for (const output of [result.stdout, result.stderr]) {
      expect(output).not.toContain("TOPSECRET");
      expect(output).not.toContain("Bearer");
    }
  });

  it("prints parseable JSON with --json, secrets masked", async () => {
    const result = await runInProcess(["config", "show", "--json", "--config", valid]);
    expect(result.code).toBe(0);
    const out = lines(result.stdout);
    expect(out).toHaveLength(1);
    const shown = JSON.parse(out[0] as string) as {
      configFile: string;
      destinations: { webhooks: { url: string; headers: Record<string, string> }[]; sharedSecret: string | null }[];
    };
    expect(shown.configFile).toBe(valid);
    const destination = shown.destinations[0];
    expect(destination?.sharedSecret).toBe("***");
    expect(destination?.webhooks.map((hook) => hook.url)).toEqual(["https://hooks.example.com/wh", "http://backup.example.com:8080/wh"]);
    expect(destination?.webhooks[0]?.headers).toEqual({ Authorization: "***", "X-Team": "growth" });
    expect(result.stdout).not.toContain("TOPSECRET");
  });

  it("shows the settings after flags and environment", async () => {
    const result = await runInProcess(["config", "show", "--json", "--config", valid, "--url", "http://127.0.0.1:9/flag", "--timeout", "2s"], {
      env: { WH_SHARED_SECRET: "TOPSECRET-env-9999" },
    });
    expect(result.code).toBe(0);
    const shown = JSON.parse(lines(result.stdout)[0] as string) as {
      timeoutMs: number;
      destinations: { webhooks: { url: string }[]; sharedSecret: string; sharedSecretFrom: string }[];
    };
    expect(shown.timeoutMs).toBe(2000);
    expect(shown.destinations[0]?.webhooks.map((hook) => hook.url)).toEqual(["http://127.0.0.1:9/flag"]);
    expect(shown.destinations[0]?.sharedSecret).toBe("***");
    expect(shown.destinations[0]?.sharedSecretFrom).toBe("WH_SHARED_SECRET");
    expect(result.stdout).not.toContain("TOPSECRET");
  });

  it("shows each destination's mode, method, batch size and signing scheme, from the file or the flags", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: "https://found.example.com/wh" }], sharedSecret: "s3cr3t-file", mode: "actions", method: "PUT" });
    const human = await runInProcess(["config", "show"], { cwd });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("actions mode: PUT, one event per request");
    expect(human.stdout).toContain("(from config file, segment scheme)");
    const flagged = await runInProcess(
      ["--json", "config", "show", "--batch-size", "50", "--scheme", "standard", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
      { cwd },
    );
    const shown = JSON.parse(lines(flagged.stdout)[0] as string) as { destinations: Record<string, unknown>[] };
    expect(shown.destinations[0]).toMatchObject({ mode: "actions", method: "PUT", batchSize: 50, scheme: "standard" });
    for (const output of [human.stdout, flagged.stdout]) expect(output).not.toMatch(/s3cr3t|MfKQ9r8/);
  });

  it("finds .whrc.json by search", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: "https://found.example.com/wh" }] });
    const result = await runInProcess(["config", "show"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(join(cwd, ".whrc.json"));
    expect(result.stdout).toContain("https://found.example.com/wh");
  });

  it("exits 2 on an invalid config file", async () => {
    const result = await runInProcess(["config", "show", "--config", join(CONFIGS, "ftp-url.whrc.json")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("webhooks[0].url: ");
  });
});

describe.concurrent("wh config validate", () => {
  it("exits 0 on a valid file and names it", async () => {
    const file = join(CONFIGS, "valid.whrc.json");
    const result = await runInProcess(["config", "validate", "--config", file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(file);
    expect(`${result.stdout}${result.stderr}`).not.toContain("TOPSECRET");
  });

  it("exits 0 on a valid .whrc.json found by search", async () => {
    const cwd = await dirWithConfig({ webhooks: [{ url: "https://found.example.com/wh" }] });
    const result = await runInProcess(["config", "validate"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(".whrc.json");
  });

  it("exits 2 and lists every problem of an invalid file", async () => {
    const result = await runInProcess(["config", "validate", "--config", join(CONFIGS, "many-problems.whrc.json")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('webhooks[0].url: "ftp://files.example.com/wh"');
    expect(result.stderr).toContain("webhooks[1].headers.Host: ");
    expect(result.stderr).toContain('webhooks[1].headers["X Team"]: ');
    expect(result.stderr).toContain("sharedSecret: ");
    expect(result.stderr).toContain("retries: unknown key");
  });

  it("exits 2 when no config file exists", async () => {
    const result = await runInProcess(["config", "validate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no config file/i);
  });

  it("prints parseable JSON with --json", async () => {
    const file = join(CONFIGS, "valid.whrc.json");
    const result = await runInProcess(["config", "validate", "--json", "--config", file]);
    expect(result.code).toBe(0);
    const out = lines(result.stdout);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0] as string)).toEqual({ valid: true, configFile: file });
  });
});
