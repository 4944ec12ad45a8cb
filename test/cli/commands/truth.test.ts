import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { bodyOf, readNdjson, SECRET, trackLine } from "./replay-helpers.js";
import { inProcess, runInProcess } from "../../helpers/in-process.js";
import { builtBin, FIXTURES, hmacHex, makeTempDir, removeTempDirs, type RunOptions } from "../../helpers/run-wh.js";

// Issue 9: a CLI that tells the truth, against real servers on 127.0.0.1. In-process, but for
// shell completion, which bash runs through a spawned bin/wh.cjs (dist/).

const server = closedAfterEach();
afterAll(removeTempDirs);

const signed = (args: string[], options: RunOptions = {}) => runInProcess(args, { ...options, env: { WH_SHARED_SECRET: SECRET, ...options.env } });
const tls = (name: string): string => readFileSync(join(FIXTURES, "tls", name), "utf8");

describe("the receiver's answer is shown", () => {
  it("shows a 404's body in human output, in --json records and in dead-letter records", async () => {
    const receiver = await server({ replies: [{ status: 404, body: "no such hook: \u001b[31mred\u001b[0m" }] });
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);

    const human = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url], { cwd: dir });
    const json = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url, "--json"], { cwd: dir });
    const replay = await signed(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(human.code).toBe(1);
    expect(human.stdout).toContain("HTTP 404: no such hook: \\x1b[31mred\\x1b[0m");
    expect(human.stdout).not.toContain("\u001b[31m");
    expect(JSON.parse(json.stdout.trim()).urls[0]).toMatchObject({ status: 404, body: "no such hook: \u001b[31mred\u001b[0m" });
    expect(replay.code).toBe(1);
    const [record] = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect((record?.urls as { body: string }[] | undefined)?.[0]?.body).toBe("no such hook: \u001b[31mred\u001b[0m");
  });

  it("shows a redirect's Location, and does not follow it", async () => {
    const receiver = await server({ replies: [{ status: 301, headers: { Location: "https://elsewhere.example/hook" } }] });
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("HTTP 301 to https://elsewhere.example/hook");
    expect(receiver.requests).toHaveLength(1);
  });

  it("with --verbose shows each attempt's headers (credentials masked), status, time and answer", async () => {
    const receiver = await server({
      replies: [
        { status: 503, body: "busy" },
        { status: 200, body: "thanks" },
      ],
    });
    const result = await signed([
      "send",
      "track",
      "--user-id",
      "u1",
      "--event",
      "E",
      "--url",
      receiver.url,
      "--header",
      "Authorization: Bearer s3cr3t-t0ken",
      "--verbose",
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /POST http:\/\/127\.0\.0\.1:\d+\/hook attempt 1 Content-Type: application\/json; User-Agent: wh\/[\d.]+; X-Signature: [0-9a-f]{40}; Authorization: \*\*\*/,
    );
    expect(result.stderr).toMatch(/attempt 1: HTTP 503: busy \(\d+ms\)/);
    expect(result.stderr).toMatch(/attempt 2: HTTP 200: thanks \(\d+ms\)/);
    expect(`${result.stdout}${result.stderr}`).not.toContain("s3cr3t-t0ken");
  });
});

describe("it says why it waits", () => {
  it("names the DNS error in the progress line, with when retries end and that Ctrl-C stops", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const wh = inProcess(["replay", "events.ndjson", "--url", "http://no-such-host.invalid/hook", "--retry-window", "1h"], {
      cwd: dir,
      env: { WH_SHARED_SECRET: SECRET },
    });
    const stderr = await wh.waitForStderr((text) => /waiting on/.test(text));
    wh.child.kill("SIGINT");
    await wh.exited;
    expect(stderr).toMatch(
      /0 delivered · 0 failed · 0 invalid · 1 waiting to retry · .* waiting on http:\/\/no-such-host\.invalid\/hook → getaddrinfo ENOTFOUND no-such-host\.invalid: retrying until \d\d:\d\d:\d\d — Ctrl-C stops, resumable/,
    );
  });

  it("gives up after --max-attempts", async () => {
    const receiver = await server({ replies: [503] });
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url, "--max-attempts", "2"]);
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(2);
    expect(result.stdout).toMatch(/gave up after 2 attempts/);
  });
});

describe("ambiguous input is refused", () => {
  it("refuses --timeout 5, suggesting 5s", async () => {
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", "http://127.0.0.1:9/", "--timeout", "5"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--timeout "5": a duration needs a unit: did you mean 5s (or 5ms)?');
  });

  it("refuses a members CSV whose header has no user column, and sends nothing", async () => {
    const receiver = await server();
    const dir = await makeTempDir();
    await writeFile(join(dir, "members.csv"), "email\na@x\n");
    const result = await signed(["audience", "sync", "VIP", "--members", "members.csv", "--url", receiver.url], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/members\.csv line 1: no user column: the header \("email"\) has no userId or user_id column/);
    expect(receiver.requests).toHaveLength(0);
  });

  it("keeps numbers JSON cannot carry exactly as strings, and string fields as strings", async () => {
    const receiver = await server();
    const track = await signed([
      "send",
      "track",
      "--user-id",
      "u1",
      "--event",
      "E",
      "--url",
      receiver.url,
      "--prop",
      "big=12345678901234567890",
      "--prop",
      "ver=1.10",
      "--prop",
      "n=42",
    ]);
    const page = await signed(["send", "page", "--user-id", "u1", "--url", receiver.url, "--prop", "path=5", "--prop", "count=5"]);
    expect(track.code, track.stderr).toBe(0);
    expect(page.code, page.stderr).toBe(0);
    expect(bodyOf(receiver.requests[0] as never).properties).toEqual({ big: "12345678901234567890", ver: "1.10", n: 42 });
    expect(bodyOf(receiver.requests[1] as never).properties).toMatchObject({ path: "5", count: 5 });
  });

  it.each([
    ["a JSON array", '[\n  {"type":"track","userId":"u1","event":"E"}\n]\n', /starts a JSON array/],
    ["pretty-printed JSON", '{\n  "type": "track",\n  "userId": "u1"\n}\n', /line 1 is "\{", the start of pretty-printed JSON/],
  ])("says once that %s is not NDJSON, and sends nothing", async (_name, text, reason) => {
    const receiver = await server();
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.json"), text);
    const result = await signed(["replay", "events.json", "--url", receiver.url], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/events\.json is not NDJSON \(one JSON object per line\)/);
    expect(result.stderr).toMatch(reason);
    expect(result.stderr.match(/not NDJSON/g)).toHaveLength(1);
    expect(receiver.requests).toHaveLength(0);
  });

  it("reads past a byte-order mark in --data files, config files and secret files", async () => {
    const receiver = await server();
    const dir = await makeTempDir();
    await writeFile(join(dir, "secret.txt"), `\uFEFF${SECRET}\n`);
    await writeFile(join(dir, "data.json"), `\uFEFF{"userId":"u1","event":"E"}`);
    await writeFile(join(dir, ".whrc.json"), `\uFEFF${JSON.stringify({ webhooks: [{ url: receiver.url }] })}`);
    const result = await runInProcess(["send", "track", "--data", "@data.json", "--secret-file", "secret.txt"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const request = receiver.requests[0];
    expect(request?.headers["x-signature"]).toBe(hmacHex(SECRET, request?.body ?? ""));
  });
});

describe("it says what it did not do", () => {
  it("prints one notice when requests go unsigned", async () => {
    const receiver = await server();
    const result = await runInProcess(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url]);
    expect(result.code).toBe(0);
    expect(result.stderr.match(/no shared secret: requests are sent unsigned/g)).toHaveLength(1);
    expect(receiver.requests[0]?.headers["x-signature"]).toBeUndefined();
  });

  it("says the server does not speak TLS for https:// on a plain HTTP port", async () => {
    const receiver = await server();
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", `https://127.0.0.1:${receiver.port}/hook`]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("the server does not speak TLS (is it a plain HTTP port? then use an http:// URL)");
    expect(result.stdout).not.toMatch(/ssl3_get_record|SSL routines/);
  });

  it("shows the message of a wh.config.js that throws", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "wh.config.js"), 'throw new Error("WEBHOOK_URL is not set");\n');
    const result = await runInProcess(["config", "show"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/wh\.config\.js:\n {2}threw Error: WEBHOOK_URL is not set/);
  });
});

describe("nothing leaks", () => {
  it("masks secret query parameters and URL passwords in attempt lines, --json, dead letters, config show and validation errors", async () => {
    const receiver = await server({ replies: [404] });
    const dir = await makeTempDir();
    const url = `${receiver.url}?token=tok-SECRET-1&plain=visible&api_key=key-SECRET-2`;
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    await writeFile(join(dir, "bad.json"), JSON.stringify({ webhooks: [{ url: "ftp://alice:pw-SECRET-3@host/x" }] }));
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ webhooks: [{ url }] }));

    const outputs = [
      await signed(["send", "track", "--user-id", "u1", "--event", "E", "--verbose"], { cwd: dir }),
      await signed(["send", "track", "--user-id", "u1", "--event", "E", "--json"], { cwd: dir }),
      await signed(["replay", "events.ndjson"], { cwd: dir }),
      await signed(["config", "show"], { cwd: dir }),
      await signed(["config", "show", "--json"], { cwd: dir }),
      await signed(["config", "validate", "--config", "bad.json"], { cwd: dir }),
    ];
    const deadLetters = readFileSync(join(dir, "events.ndjson.failed.ndjson"), "utf8");
    const everything = [...outputs.flatMap((output) => [output.stdout, output.stderr]), deadLetters].join("\n");
    expect(everything).not.toMatch(/-SECRET-/);
    expect(everything).toContain("token=***&plain=visible&api_key=***");
    expect(everything).toContain("ftp://***:***@host/x");
    expect(receiver.requests[0]?.path).toBe("/hook?token=tok-SECRET-1&plain=visible&api_key=key-SECRET-2");
  });

  it("sends a URL's user:password as HTTP basic auth", async () => {
    const receiver = await server();
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url.replace("http://", "http://alice:pa%3Ass@")]);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from("alice:pa:ss").toString("base64")}`);
    expect(result.stdout).not.toContain("pa%3Ass");
  });

  it("still refuses an untrusted certificate with NODE_TLS_REJECT_UNAUTHORIZED=0", async () => {
    const receiver = await server({ tls: { key: tls("self-signed.key"), cert: tls("self-signed.crt") } });
    const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", receiver.url], { env: { NODE_TLS_REJECT_UNAUTHORIZED: "0" } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/certificate not trusted/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("headers that cannot work", () => {
  it.each(["Expect: 100-continue", "Upgrade: websocket", "Keep-Alive: timeout=5", "TE: trailers", "Trailer: X-Sum", "Proxy-Authorization: Basic eA=="])(
    "refuses --header %j with exit 2",
    async (header) => {
      const result = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", "http://127.0.0.1:9/", "--header", header]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/is a hop-by-hop or protocol header/);
    },
  );
});

describe("proxies", () => {
  async function connectProxy(): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
    const tunnels: string[] = [];
    const sockets = new Set<Socket>();
    const proxy = createServer();
    proxy.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
      tunnels.push(request.url ?? "");
      const [host, port] = (request.url ?? "").split(":");
      const upstream = connect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on("error", () => undefined);
      }
    });
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    return {
      url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
      tunnels,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => proxy.close(resolve));
      },
    };
  }

  it("delivers through HTTPS_PROXY / HTTP_PROXY with CONNECT, with the certificate still checked, and not for NO_PROXY hosts", async () => {
    const proxy = await connectProxy();
    try {
      const plain = await server();
      const secure = await server({ tls: { key: tls("server.key"), cert: tls("server.crt") } });
      const env = { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url };
      const viaProxy = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", plain.url], { env });
      const tlsViaProxy = await signed(
        ["send", "track", "--user-id", "u1", "--event", "E", "--url", secure.url.replace("127.0.0.1", "localhost"), "--ca", join(FIXTURES, "tls", "ca.crt")],
        { env },
      );
      const untrusted = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", secure.url.replace("127.0.0.1", "localhost")], { env });
      expect(viaProxy.code, viaProxy.stderr).toBe(0);
      expect(tlsViaProxy.code, tlsViaProxy.stdout).toBe(0);
      expect(untrusted.code).toBe(1);
      expect(untrusted.stdout).toMatch(/certificate not trusted/);
      expect(proxy.tunnels).toEqual([`127.0.0.1:${plain.port}`, `localhost:${secure.port}`, `localhost:${secure.port}`]);
      expect(secure.requests).toHaveLength(1);

      const direct = await signed(["send", "track", "--user-id", "u1", "--event", "E", "--url", plain.url], { env: { ...env, NO_PROXY: "127.0.0.1" } });
      expect(direct.code, direct.stderr).toBe(0);
      expect(proxy.tunnels).toHaveLength(3);
      expect(plain.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });
});

describe("exit codes and machine output", () => {
  it("exits 2 for wh with no command, and for a message send refuses", async () => {
    expect((await runInProcess([])).code).toBe(2);
    const refused = await signed(["send", "track", "--user-id", "u1", "--url", "http://127.0.0.1:9/"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/invalid track message: You must pass 'event'\./);
  });

  it("puts one JSON error object on stdout with --json", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "bad.json"), JSON.stringify({ webhooks: [{ url: "nope" }] }));
    const result = await runInProcess(["config", "validate", "--config", "bad.json", "--json"], { cwd: dir });
    expect(result.code).toBe(2);
    const lines = result.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toEqual({
      error: expect.objectContaining({ code: "E_CONFIG", exitCode: 2, issues: [expect.stringMatching(/webhooks\[0\]\.url: "nope" is not an absolute URL/)] }),
    });
  });

  it("applies send's field rules in wh ingest, and says 'missing type'", async () => {
    const receiver = await server();
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      `${JSON.stringify({ type: "page", userId: "u1", properties: { url: 5 } })}\n${JSON.stringify({ userId: "u1" })}\n`,
    );
    const result = await runInProcess(["ingest", "events.ndjson", "--endpoint", `http://127.0.0.1:${receiver.port}`, "--write-key", "wk"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 1: invalid: properties\.url: Invalid input: expected string, received number/);
    expect(result.stderr).toMatch(/line 2: invalid: missing type/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("shell completion", () => {
  it("loads in bash and completes commands, flags and source names", async () => {
    const dir = await makeTempDir();
    await writeFile(
      join(dir, ".whrc.json"),
      JSON.stringify({ sources: { web: { webhooks: [{ url: "http://127.0.0.1:9/" }] }, ios: { webhooks: [{ url: "http://127.0.0.1:9/" }] } } }),
    );
    await writeFile(join(dir, "wh"), `#!/bin/sh\nexec "${process.execPath}" "${builtBin()}" "$@"\n`, { mode: 0o755 });
    const script = `
      export PATH="${dir}:$PATH"
      source <(wh completion bash)
      complete -p wh
      COMP_WORDS=(wh rep); COMP_CWORD=1; _wh; echo "1:\${COMPREPLY[*]}"
      COMP_WORDS=(wh replay --con); COMP_CWORD=2; _wh; echo "2:\${COMPREPLY[*]}"
      COMP_WORDS=(wh audience sync --mem); COMP_CWORD=3; _wh; echo "3:\${COMPREPLY[*]}"
      COMP_WORDS=(wh send track --source ""); COMP_CWORD=4; _wh; echo "4:\${COMPREPLY[*]}"`;
    const result = spawnSync("bash", ["-c", script], { cwd: dir, encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("complete -o default -F _wh wh");
    expect(result.stdout).toContain("1:replay");
    expect(result.stdout).toMatch(/2:(--concurrency --config|--config --concurrency)\n/);
    expect(result.stdout).toContain("3:--members");
    expect(result.stdout).toMatch(/4:(web ios|ios web)/);
    for (const shell of ["zsh", "fish"]) expect((await runInProcess(["completion", shell])).stdout).toMatch(/wh/);
    expect((await runInProcess(["completion", "tcsh"])).code).toBe(2);
  });
});
