import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import * as tls from "node:tls";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRecordingServer, startSilentServer, type RecordedRequest, type RecordingServer, serverForEachTest } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { FIXTURES, hmacHex, lines, makeTempDir, removeTempDirs, run, STACK_TRACE } from "../../helpers/run-wh.js";

const SECRET = "s3cret-send";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let server: RecordingServer;

/** A fresh recording server for each test of the describe block that calls this. */
const useServer = (): void => serverForEachTest((started) => (server = started));

afterAll(removeTempDirs);

/** `wh send TYPE ...` to the recording server, signed with SECRET. */
function send(type: string, args: readonly string[], options: Parameters<typeof runInProcess>[1] = {}) {
  return runInProcess(["send", type, "--url", server.url, "--secret", SECRET, "--retry-window", "1s", ...args], options);
}

function onlyRequest(): RecordedRequest {
  expect(server.requests).toHaveLength(1);
  return server.requests[0] as RecordedRequest;
}

function bodyOf(request: RecordedRequest): Record<string, unknown> {
  return JSON.parse(request.body.toString("utf8")) as Record<string, unknown>;
}

function expectSigned(request: RecordedRequest, secret = SECRET): void {
  expect(request.headers["x-signature"]).toBe(hmacHex(secret, request.body));
}

describe("wh send: the seven message types", () => {
  useServer();

  const cases: { type: string; args: string[]; expected: Record<string, unknown>; absent: string[] }[] = [
    {
      type: "page",
      args: ["--user-id", "u1", "--name", "Pricing", "--prop", "path=/pricing", "--prop", "title=Pricing"],
      expected: { version: 1, type: "page", userId: "u1", name: "Pricing", properties: { path: "/pricing", title: "Pricing" } },
      absent: [],
    },
    {
      type: "screen",
      args: ["--user-id", "u2", "--name", "Home", "--context", "device.model=Pixel 9", "--context", "os.name=Android", "--context", "app.version=4.1.2"],
      expected: {
        version: 1,
        type: "screen",
        userId: "u2",
        name: "Home",
        context: { device: { model: "Pixel 9" }, os: { name: "Android" }, app: { version: "4.1.2" } },
      },
      absent: [],
    },
    {
      type: "identify",
      args: ["--user-id", "u1", "--trait", "plan=pro"],
      expected: { version: 1, type: "identify", userId: "u1", traits: { plan: "pro" } },
      absent: [],
    },
    {
      type: "track",
      args: ["--user-id", "u1", "--event", "Order Completed", "--prop", "total=99.5"],
      expected: { version: 1, type: "track", userId: "u1", event: "Order Completed", properties: { total: 99.5 } },
      absent: [],
    },
    {
      type: "alias",
      args: ["--user-id", "u1", "--previous-id", "a-77"],
      expected: { version: 1, type: "alias", "Previous ID": "a-77", "User ID": "u1" },
      absent: ["userId", "previousId"],
    },
    {
      type: "group",
      args: ["--user-id", "u1", "--group-id", "g-acme", "--trait", "name=Acme Inc"],
      expected: { version: 1, type: "group", userId: "u1", groupId: "g-acme", traits: { name: "Acme Inc" } },
      absent: [],
    },
    {
      type: "delete",
      args: ["--user-id", "u3"],
      expected: { type: "delete", userId: "u3" },
      absent: ["version", "messageId"],
    },
  ];

  it.each(cases)("delivers a $type built from flags, signed over the raw bytes", async ({ type, args, expected, absent }) => {
    const result = await send(type, args);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    // The V8 flag send sets at run time (adapters/v8-flags.ts) is one this Node knows.
    expect(result.stderr).not.toContain("unrecognized flag");
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/hook");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["user-agent"]).toBe("wh/0.1.0");
    expectSigned(request);
    const body = bodyOf(request);
    expect(body).toMatchObject(expected);
    for (const key of absent) expect(body).not.toHaveProperty([key]);
    expect(body.timestamp).toMatch(ISO_MS);
    if (type === "delete") expect(Object.keys(body).sort()).toEqual(["timestamp", "type", "userId"]);
    else expect(body.messageId).toMatch(UUID);
    expect(result.stdout).toContain("delivered");
  });
});

describe("wh send: building the message", () => {
  useServer();

  it("nests dotted --prop and --context keys and parses JSON values", async () => {
    const result = await send("track", [
      "--user-id",
      "u1",
      "--event",
      "Cart Viewed",
      "--prop",
      "cart.total=12.5",
      "--prop",
      'cart.items=["a","b"]',
      "--prop",
      "cart.open=true",
      "--prop",
      'code="007"',
      "--prop",
      "note=hello world",
      "--prop",
      'meta={"a":1}',
      "--context",
      "ip=203.0.113.7",
      "--context",
      "app.build=412",
    ]);
    expect(result.code).toBe(0);
    const body = bodyOf(onlyRequest());
    expect(body.properties).toEqual({ cart: { total: 12.5, items: ["a", "b"], open: true }, code: "007", note: "hello world", meta: { a: 1 } });
    expect(body.context).toEqual({ ip: "203.0.113.7", app: { build: 412 } });
  });

  it("nests dotted --trait keys", async () => {
    const result = await send("identify", ["--user-id", "u1", "--trait", "address.city=Paris", "--trait", 'address.zip="75001"', "--trait", "logins=12"]);
    expect(result.code).toBe(0);
    expect(bodyOf(onlyRequest()).traits).toEqual({ address: { city: "Paris", zip: "75001" }, logins: 12 });
  });

  it("carries anonymousId with a null userId when only --anonymous-id is given", async () => {
    const result = await send("page", ["--anonymous-id", "a-77", "--prop", "path=/"]);
    expect(result.code).toBe(0);
    const body = bodyOf(onlyRequest());
    expect(body.userId).toBeNull();
    expect(body.anonymousId).toBe("a-77");
  });

  it("takes the message from --data JSON, and flags override its fields", async () => {
    const data = JSON.stringify({ userId: "u9", event: "Signed Up", properties: { plan: "pro" }, messageId: "m-data-1" });
    const result = await send("track", ["--data", data, "--prop", "seats=3"]);
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expectSigned(request);
    expect(bodyOf(request)).toMatchObject({ type: "track", userId: "u9", event: "Signed Up", properties: { plan: "pro", seats: 3 }, messageId: "m-data-1" });
  });

  it("reads --data @file relative to the working directory", async () => {
    const cwd = await makeTempDir();
    await writeFile(join(cwd, "identify.json"), JSON.stringify({ userId: "u5", traits: { email: "ada@example.com" } }));
    const result = await send("identify", ["--data", "@identify.json"], { cwd });
    expect(result.code).toBe(0);
    expect(bodyOf(onlyRequest())).toMatchObject({ type: "identify", userId: "u5", traits: { email: "ada@example.com" } });
  });

  it("reads --data - from standard input", async () => {
    const result = await send("group", ["--data", "-"], { input: JSON.stringify({ userId: "u1", groupId: "g-stdin", traits: { employees: 250 } }) });
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expectSigned(request);
    expect(bodyOf(request)).toMatchObject({ type: "group", userId: "u1", groupId: "g-stdin", traits: { employees: 250 } });
  });

  it.each([
    ["2026-11-21T10:30:08.5+01:00", "2026-11-21T09:30:08.500Z"],
    ["2026-11-21T09:30:08Z", "2026-11-21T09:30:08.000Z"],
    ["2026-11-20T23:00:00-05:30", "2026-11-21T04:30:00.000Z"],
    ["2026-11-21", "2026-11-21T00:00:00.000Z"],
  ])("converts --timestamp %s to UTC with milliseconds", async (given, expected) => {
    const result = await send("track", ["--user-id", "u1", "--event", "E", "--timestamp", given]);
    expect(result.code).toBe(0);
    expect(bodyOf(onlyRequest()).timestamp).toBe(expected);
  });

  it("sends nothing and exits 0 when --integrations turns Webhooks off, and says it was skipped", async () => {
    const result = await send("track", ["--user-id", "u1", "--event", "E", "--integrations", '{"Webhooks":false}']);
    expect(result.code).toBe(0);
    expect(`${result.stdout}${result.stderr}`).toMatch(/skipped/i);
    expect(server.requests).toHaveLength(0);
  });

  it("reports a skipped message as one JSON record with --json", async () => {
    const result = await send("track", ["--json", "--user-id", "u1", "--event", "E", "--integrations", '{"All":false}']);
    expect(result.code).toBe(0);
    const out = lines(result.stdout);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0] as string)).toMatchObject({ type: "track", outcome: "skipped" });
    expect(server.requests).toHaveLength(0);
  });
});

describe.concurrent("wh send: invalid messages are refused before anything is sent", () => {
  // One server for the whole block, whose tests run at once: none of them may reach it.
  let idle: RecordingServer;
  beforeAll(async () => {
    idle = await startRecordingServer();
  });
  afterAll(async () => {
    await idle.close();
  });
  const send = (type: string, args: readonly string[]) => runInProcess(["send", type, "--url", idle.url, "--secret", SECRET, "--retry-window", "1s", ...args]);
  const big = "x".repeat(33_000);
  it.each([
    ["track without --event", "track", ["--user-id", "u1"], "You must pass 'event'."],
    ["identify without an id", "identify", ["--trait", "plan=pro"], "You must pass either an 'anonymousId' or 'userId'."],
    ["track without an id", "track", ["--event", "E"], "You must pass either an 'anonymousId' or 'userId'."],
    ["group without --group-id", "group", ["--user-id", "u1"], "groupId"],
    ["alias without --previous-id", "alias", ["--user-id", "u1"], "previousId"],
    ["alias without --user-id", "alias", ["--previous-id", "a-1"], "userId"],
    ["delete without --user-id", "delete", [], "userId"],
    ["delete with only --anonymous-id", "delete", ["--anonymous-id", "a-1"], "userId"],
    ["a --timestamp that is not ISO 8601", "track", ["--user-id", "u1", "--event", "E", "--timestamp", "yesterday"], "ISO 8601"],
    ["a --timestamp on a day that does not exist", "track", ["--user-id", "u1", "--event", "E", "--timestamp", "2026-02-31T10:00:00Z"], "ISO 8601"],
    ["a message over 32 KB from --data", "track", ["--data", JSON.stringify({ userId: "u1", event: "Big", properties: { blob: big } })], "32"],
  ])("exits 2 on %s, names the rule and sends nothing", async (_name, type, args, words) => {
    const result = await send(type, args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(words);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(idle.requests).toHaveLength(0);
  });

  it("says how big a message over 32 KB is and what the limit is", async () => {
    const result = await send("track", ["--data", JSON.stringify({ userId: "u1", event: "Big", properties: { blob: big } })]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/32[,.]?000 bytes|32 KB/);
    expect(idle.requests).toHaveLength(0);
  });

  it("exits 2 on --data that is not JSON", async () => {
    const result = await send("track", ["--data", "{not json"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--data");
    expect(idle.requests).toHaveLength(0);
  });

  it("exits 2 on a --data file that does not exist", async () => {
    const result = await send("track", ["--data", "@missing.json"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing.json");
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(idle.requests).toHaveLength(0);
  });

  it("exits 2 on an unknown message type and lists the known ones", async () => {
    const result = await send("purchase", ["--user-id", "u1"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("purchase");
    expect(result.stderr).toContain("identify");
    expect(idle.requests).toHaveLength(0);
  });

  it("exits 2 on an unknown flag", async () => {
    const result = await send("track", ["--user-id", "u1", "--event", "E", "--colour", "red"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--colour");
    expect(idle.requests).toHaveLength(0);
  });

  it("exits 2 when there is no URL to deliver to", async () => {
    const result = await runInProcess(["send", "track", "--user-id", "u1", "--event", "E"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/url/i);
  });
});

describe("wh send: delivery outcomes", () => {
  useServer();

  it("exits 1 on a 404 and names the URL and the status", async () => {
    await server.close();
    server = await startRecordingServer({ replies: [404] });
    const result = await send("track", ["--user-id", "u1", "--event", "E"]);
    expect(result.code).toBe(1);
    const output = lines(`${result.stdout}\n${result.stderr}`);
    expect(output.some((line) => line.includes(server.url) && line.includes("404"))).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("retries a 503 and exits 0 when the next attempt gets a 200, sending the same signed bytes", async () => {
    await server.close();
    server = await startRecordingServer({ replies: [503, 200] });
    const result = await send("track", ["--user-id", "u1", "--event", "E", "--retry-window", "20s"]);
    expect(result.code).toBe(0);
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests as [RecordedRequest, RecordedRequest];
    expect(second.body.equals(first.body)).toBe(true);
    expectSigned(first);
    expect(second.headers["x-signature"]).toBe(first.headers["x-signature"]);
  });

  it("exits 1 and names the URL when nothing listens there", async () => {
    const url = server.url;
    await server.close();
    const result = await runInProcess(["send", "track", "--user-id", "u1", "--event", "E", "--url", url, "--retry-window", "1s"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(url);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("stops retrying on Ctrl-C and exits 130", async () => {
    await server.close();
    server = await startRecordingServer({ replies: [503] });
    const wh = await startInProcess(["send", "track", "--url", server.url, "--secret", SECRET, "--user-id", "u1", "--event", "E", "--retry-window", "1h"]);
    const guard = setTimeout(() => wh.child.kill("SIGTERM"), 20_000); // never leave it retrying for an hour
    let result: Awaited<typeof wh.exited>;
    try {
      await wh.waitForStderr((text) => text.includes("retrying in"));
      wh.child.kill("SIGINT");
      result = await wh.exited;
    } finally {
      clearTimeout(guard);
    }
    expect(result.code).toBe(130);
    expect(result.stdout).toMatch(/interrupted/);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(server.requests.length).toBeGreaterThanOrEqual(1);
  });

  it("prints exactly one JSON line with outcome delivered on stdout with --json", async () => {
    const result = await send("track", ["--json", "--user-id", "u1", "--event", "E", "--message-id", "m-json-1"]);
    expect(result.code).toBe(0);
    expect(result.stdout.endsWith("\n")).toBe(true);
    const out = result.stdout.split("\n").slice(0, -1);
    expect(out).toHaveLength(1);
    const record = JSON.parse(out[0] as string) as Record<string, unknown>;
    expect(record).toMatchObject({ type: "track", messageId: "m-json-1", outcome: "delivered", deliveredTo: server.url });
    expect(server.requests).toHaveLength(1);
  });

  it("prints one JSON line with outcome failed and exits 1 on a 404 with --json", async () => {
    await server.close();
    server = await startRecordingServer({ replies: [404] });
    const result = await send("track", ["--json", "--user-id", "u1", "--event", "E"]);
    expect(result.code).toBe(1);
    const out = result.stdout.split("\n").slice(0, -1);
    expect(out).toHaveLength(1);
    const record = JSON.parse(out[0] as string) as { outcome: string; urls: { url: string; status?: number }[] };
    expect(record.outcome).toBe("failed");
    expect(record.urls).toEqual([expect.objectContaining({ url: server.url, status: 404 })]);
  });

  it("delivers to the second URL when the first one refuses", async () => {
    const other = await startRecordingServer({ replies: [404] });
    try {
      const result = await runInProcess([
        "send",
        "identify",
        "--user-id",
        "u1",
        "--url",
        other.url,
        "--url",
        server.url,
        "--secret",
        SECRET,
        "--retry-window",
        "1s",
      ]);
      expect(result.code).toBe(0);
      expect(other.requests).toHaveLength(1);
      expectSigned(onlyRequest());
    } finally {
      await other.close();
    }
  });
});

describe("wh send: static headers and --dry-run", () => {
  useServer();

  it("sends a --header to the server as given", async () => {
    const result = await send("track", ["--user-id", "u1", "--event", "E", "--header", "Authorization: Bearer x", "--header", "X-Team: growth"]);
    expect(result.code).toBe(0);
    const request = onlyRequest();
    expect(request.headers.authorization).toBe("Bearer x");
    expect(request.headers["x-team"]).toBe("growth");
    expectSigned(request);
  });

  it("prints the body, headers and X-Signature, masks Authorization and sends nothing with --dry-run", async () => {
    const result = await send("track", ["--dry-run", "--user-id", "u1", "--event", "E", "--header", "Authorization: Bearer x"]);
    expect(result.code).toBe(0);
    expect(server.requests).toHaveLength(0);
    const out = result.stdout.split("\n");
    expect(out).toContain(`POST ${server.url}`);
    expect(out).toContain("Content-Type: application/json");
    expect(out).toContain("User-Agent: wh/0.1.0");
    expect(out).toContain("Authorization: ***");
    expect(result.stdout).not.toContain("Bearer x");
    expect(result.stderr).not.toContain("Bearer x");
    const signatureLine = out.find((line) => line.startsWith("X-Signature: "));
    const bodyLine = out.find((line) => line.startsWith("{"));
    expect(signatureLine).toBeDefined();
    expect(bodyLine).toBeDefined();
    expect(JSON.parse(bodyLine as string)).toMatchObject({ type: "track", userId: "u1", event: "E" });
    expect(signatureLine).toBe(`X-Signature: ${hmacHex(SECRET, bodyLine as string)}`);
  });

  it("prints a parseable dry-run record whose signature covers its body with --dry-run --json", async () => {
    const result = await send("identify", ["--dry-run", "--json", "--user-id", "u1", "--header", "Authorization: Bearer x"]);
    expect(result.code).toBe(0);
    expect(server.requests).toHaveLength(0);
    const out = lines(result.stdout);
    expect(out).toHaveLength(1);
    const record = JSON.parse(out[0] as string) as { url: string; headers: Record<string, string>; signature: string; body: string };
    expect(record.url).toBe(server.url);
    expect(record.headers.Authorization).toBe("***");
    expect(record.signature).toBe(hmacHex(SECRET, record.body));
    expect(result.stdout).not.toContain("Bearer x");
  });
});

describe("wh send --ca with NODE_EXTRA_CA_CERTS", () => {
  const tlsFixture = (name: string): string => join(FIXTURES, "tls", name);
  // Node 22.15 and later list what they trust by default, NODE_EXTRA_CA_CERTS included; Node 20 cannot.
  const listsDefaults = typeof (tls as { getCACertificates?: unknown }).getCACertificates === "function";
  let signed: RecordingServer;
  beforeAll(async () => {
    signed = await startRecordingServer({ tls: { key: readFileSync(tlsFixture("server.key")), cert: readFileSync(tlsFixture("server.crt")) } });
  });
  afterAll(() => signed.close());

  /**
   * A CA-signed receiver; --ca names an unrelated certificate; the signing CA comes, or not, from
   * NODE_EXTRA_CA_CERTS. Spawned: Node reads NODE_EXTRA_CA_CERTS when a process starts, so only a
   * process of its own sees it.
   */
  const sendSigned = (extra: string | undefined) =>
    run(
      [
        "send",
        "track",
        "--user-id",
        "u1",
        "--event",
        "E",
        "--url",
        signed.url,
        "--secret",
        SECRET,
        "--ca",
        tlsFixture("self-signed.crt"),
        "--retry-window",
        "0s",
      ],
      { env: { NODE_EXTRA_CA_CERTS: extra } },
    );

  it.runIf(listsDefaults)("keeps trusting the certificates of NODE_EXTRA_CA_CERTS when --ca adds another", async () => {
    const result = await sendSigned(tlsFixture("ca.crt"));
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.code).toBe(0);
    expect(signed.requests).toHaveLength(1);
  });

  it("does not trust the receiver when neither --ca nor NODE_EXTRA_CA_CERTS holds its CA, and sends it nothing", async () => {
    const before = signed.requests.length;
    const result = await sendSigned(undefined);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /certificate not trusted \(unable to verify the first certificate, UNABLE_TO_VERIFY_LEAF_SIGNATURE\): give its CA with --ca FILE \(or NODE_EXTRA_CA_CERTS\)/,
    );
    expect(signed.requests).toHaveLength(before);
  });
});

describe("wh send --timeout against a TLS handshake that never finishes", () => {
  it("ends the attempt and the process at the timeout, not at undici's 10 s connect timeout", async () => {
    const silent = await startSilentServer();
    try {
      const url = `https://127.0.0.1:${silent.port}/hook`;
      const started = Date.now();
      const result = await runInProcess([
        "send",
        "track",
        "--user-id",
        "u1",
        "--event",
        "E",
        "--url",
        url,
        "--secret",
        SECRET,
        "--timeout",
        "300ms",
        "--retry-window",
        "0s",
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("no response within 300ms");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.close();
    }
  });
});
