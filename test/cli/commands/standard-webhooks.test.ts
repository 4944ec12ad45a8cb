import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { createServer } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { nodeWebhook } from "../../../src/index.js";
import { closeServer, serverUrl } from "../../helpers/http-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { closedAfterEach, type RecordedRequest } from "../../helpers/recording-server.js";
import { lines, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";
import { basic, eventually, post as postToServe, startServe } from "./serve-helpers.js";

// Every surface of --scheme standard, its requests checked by the oracles (the standardwebhooks
// and svix packages): what wh sends, each must verify.

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const started = closedAfterEach();
afterAll(removeTempDirs);

function headersOf(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
}

/** Both oracles accept the request as it arrived. */
function expectStandardSigned(request: RecordedRequest): void {
  const headers = headersOf(request);
  expect(headers["x-signature"]).toBeUndefined();
  expect(() => new StandardWebhook(SECRET).verify(request.body.toString("utf8"), headers)).not.toThrow();
  expect(() => new SvixWebhook(SECRET).verify(request.body.toString("utf8"), headers)).not.toThrow();
}

describe("wh send and wh replay --scheme standard", () => {
  it("wh send signs with the three headers, webhook-id the messageId", async () => {
    const server = await started();
    const result = await runInProcess([
      "send",
      "track",
      "--event",
      "Signed Up",
      "--user-id",
      "u1",
      "--message-id",
      "m-42",
      "--url",
      server.url,
      "--secret",
      SECRET,
      "--scheme",
      "standard",
    ]);
    expect(result.code).toBe(0);
    const [request] = server.requests;
    expectStandardSigned(request!);
    expect(request?.headers["webhook-id"]).toBe("m-42");
  });

  it("wh replay signs every event, each under its own messageId; the config's scheme works as the flag does", async () => {
    const server = await started();
    const cwd = await makeTempDir();
    const events = ["a", "b"].map((id) => JSON.stringify({ type: "track", event: "E", userId: "u1", messageId: `m-${id}` }));
    await writeFile(join(cwd, "events.ndjson"), `${events.join("\n")}\n`);
    await writeFile(join(cwd, ".whrc.json"), JSON.stringify({ webhooks: [{ url: server.url }], sharedSecret: SECRET, scheme: "standard" }));
    const result = await runInProcess(["replay", "events.ndjson"], { cwd });
    expect(result.code).toBe(0);
    expect(server.requests.map((request) => request.headers["webhook-id"]).sort()).toEqual(["m-a", "m-b"]);
    for (const request of server.requests) expectStandardSigned(request);
  });

  it("refuses a secret that is not whsec_, naming where it came from, without showing it and before sending", async () => {
    const server = await started();
    const result = await runInProcess(["send", "track", "--event", "E", "--user-id", "u1", "--url", server.url, "--scheme", "standard"], {
      env: { WH_SHARED_SECRET: "plain-segment-secret" },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("WH_SHARED_SECRET does not fit scheme standard: a Standard Webhooks secret starts with whsec_");
    expect(result.stderr).not.toContain("plain-segment-secret");
    expect(server.requests).toHaveLength(0);
  });

  it("--dry-run shows the three headers", async () => {
    const result = await runInProcess([
      "send",
      "track",
      "--event",
      "E",
      "--user-id",
      "u1",
      "--message-id",
      "m-1",
      "--url",
      "http://127.0.0.1:9/hook",
      "--secret",
      SECRET,
      "--scheme",
      "standard",
      "--dry-run",
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^webhook-id: m-1$/m);
    expect(result.stdout).toMatch(/^webhook-timestamp: \d+$/m);
    expect(result.stdout).toMatch(/^webhook-signature: v1,[A-Za-z0-9+/]+=*$/m);
    expect(result.stdout).not.toMatch(/X-Signature/);
  });
});

describe("wh sign and wh verify --scheme standard", () => {
  const body = '{"type":"track","event":"E","userId":"u1","messageId":"m-7"}';
  const now = (): number => Math.floor(Date.now() / 1000);

  it("wh sign prints what standardwebhooks signs for the same id, timestamp and body", async () => {
    const result = await runInProcess(["sign", "--scheme", "standard", "--secret", SECRET, "--id", "msg_1", "--timestamp", "1674087231"], { input: body });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${new StandardWebhook(SECRET).sign("msg_1", new Date(1_674_087_231_000), body)}\n`);
  });

  it("wh verify accepts what svix signs, and refuses a tampered timestamp or id, or an old one", async () => {
    const signedAt = now();
    const signature = new SvixWebhook(SECRET).sign("msg_1", new Date(signedAt * 1000), body);
    const verify = (id: string, timestamp: number) =>
      runInProcess(["verify", "--scheme", "standard", "--secret", SECRET, "--id", id, "--timestamp", String(timestamp), "--signature", signature], {
        input: body,
      });
    expect(await verify("msg_1", signedAt)).toMatchObject({ code: 0, stdout: "valid: a signature matches the id, timestamp and body\n" });
    expect(await verify("msg_2", signedAt)).toMatchObject({ code: 1, stdout: "invalid: no signature matches the id, timestamp and body\n" });
    expect(await verify("msg_1", signedAt - 1)).toMatchObject({ code: 1, stdout: "invalid: no signature matches the id, timestamp and body\n" });
    const old = signedAt - 3600;
    const oldSignature = new SvixWebhook(SECRET).sign("msg_1", new Date(old * 1000), body);
    const args = ["verify", "--scheme", "standard", "--secret", SECRET, "--id", "msg_1", "--timestamp", String(old), "--signature", oldSignature];
    expect((await runInProcess(args, { input: body })).stdout).toMatch(/^invalid: webhook-timestamp is older than the tolerance/);
    expect(await runInProcess([...args, "--tolerance", "2h"], { input: body })).toMatchObject({ code: 0 });
  });

  it("wh verify --capture checks each record's headers against the time it was received", async () => {
    const cwd = await makeTempDir();
    const receivedAt = "2026-01-02T03:04:05.000Z";
    const signedAt = Date.parse(receivedAt) / 1000 - 10;
    const headers = {
      "webhook-id": "m-7",
      "webhook-timestamp": String(signedAt),
      "webhook-signature": new StandardWebhook(SECRET).sign("m-7", new Date(signedAt * 1000), body),
    };
    const record = (over: Record<string, string>) => JSON.stringify({ receivedAt, method: "POST", path: "/hook", headers: { ...headers, ...over }, body });
    await writeFile(join(cwd, "captured.ndjson"), `${record({})}\n${record({ "webhook-id": "m-8" })}\n`);
    const result = await runInProcess(["--json", "verify", "--scheme", "standard", "--secret", SECRET, "--capture", "captured.ndjson"], { cwd });
    expect(result.code).toBe(1);
    expect(
      result.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).verdict),
    ).toEqual(["valid", "invalid"]);
  });
});

describe("wh listen --scheme standard", () => {
  it("accepts what wh send signs and what svix signs, refuses an old timestamp and a tampered id with the reason, and captures only the accepted", async () => {
    const cwd = await makeTempDir();
    const wh = await startInProcess(["listen", "--port", "0", "--json", "--secret", SECRET, "--scheme", "standard", "--out", "captured.ndjson"], { cwd });
    const url = (JSON.parse(lines(await wh.waitForStdout((text) => text.includes("\n")))[0]!) as { listening: string }).listening;
    const sent = await runInProcess(["send", "track", "--event", "E", "--user-id", "u1", "--url", url, "--secret", SECRET, "--scheme", "standard"]);
    expect(sent.code).toBe(0);
    const body = '{"type":"track","event":"E","userId":"u2"}';
    const post = async (id: string, signedId: string, seconds: number) => {
      const headers = {
        "webhook-id": id,
        "webhook-timestamp": String(seconds),
        "webhook-signature": new SvixWebhook(SECRET).sign(signedId, new Date(seconds * 1000), body),
      };
      return (await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })).status;
    };
    const seconds = Math.floor(Date.now() / 1000);
    expect(await post("msg_1", "msg_1", seconds)).toBe(200);
    expect(await post("msg_2", "msg_2", seconds - 301)).toBe(401);
    expect(await post("msg_3", "msg_1", seconds)).toBe(401);
    await wh.waitForStdout((text) => lines(text).length >= 5);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    const records = lines(wh.stdout())
      .slice(1)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((record) => [record.signature, record.status])).toEqual([
      ["valid", 200],
      ["valid", 200],
      ["invalid", 401],
      ["invalid", 401],
    ]);
    expect(String(records[2]?.reason)).toMatch(/older than the tolerance/);
    const verified = await runInProcess(["verify", "--scheme", "standard", "--secret", SECRET, "--capture", "captured.ndjson"], { cwd });
    expect(verified.stdout).toMatch(/1 +POST.*valid\n2 +POST.*valid\n$/);
    expect(verified).toMatchObject({ code: 0 });
    expect(verified.stderr).toContain("2 of 2 records verified");
  });
});

describe("wh check --scheme standard", () => {
  /** A receiver verifying Standard Webhooks with wh's own adapter, its tolerance as given. */
  async function receiver(toleranceSeconds: number) {
    const server = createServer(nodeWebhook({ secret: SECRET, scheme: "standard", toleranceSeconds }, (_webhook, _request, response) => void response.end()));
    server.listen(0, "127.0.0.1");
    return { url: await serverUrl(server), close: () => closeServer(server) };
  }

  it("passes a receiver that checks the headers and the timestamp, the replayed request refused", async () => {
    const app = await receiver(300);
    try {
      const result = await runInProcess(["check", app.url, "--scheme", "standard", "--secret", SECRET]);
      expect(result.code).toBe(0);
      for (const name of ["signature-wrong", "signature-missing", "signature-reserialized", "signature-body-changed", "signature-replayed"])
        expect(result.stdout).toMatch(new RegExp(`✔ pass  ${name} +HTTP 401`));
    } finally {
      await app.close();
    }
  });

  it("fails a receiver that takes a timestamp of any age, on signature-replayed alone", async () => {
    const app = await receiver(86_400);
    try {
      const result = await runInProcess(["--json", "check", app.url, "--scheme", "standard", "--secret", SECRET]);
      expect(result.code).toBe(1);
      const failed = lines(result.stdout)
        .map((line) => JSON.parse(line) as { case?: string; outcome?: string })
        .filter((record) => record.outcome === "fail");
      expect(failed.map((record) => record.case)).toEqual(["signature-replayed"]);
    } finally {
      await app.close();
    }
  });
});

describe("wh serve --scheme standard", () => {
  it("delivers what it accepts signed with the three headers; a retry keeps the webhook-id and is signed again", async () => {
    const hook = await started({ replies: [500, 200] });
    const serve = await startServe(["--url", hook.url, "--scheme", "standard"], { cwd: await makeTempDir(), env: { WH_SHARED_SECRET: SECRET } });
    try {
      const event = { type: "track", event: "Order Completed", userId: "u1", messageId: "m-serve" };
      const answer = await postToServe(serve.url, "/v1/track", JSON.stringify(event), { "content-type": "application/json", authorization: basic("wk-std") });
      expect(answer.status).toBe(200);
      await eventually(() => hook.requests.length === 2, "the retry");
      expect(hook.requests.map((request) => request.headers["webhook-id"])).toEqual(["m-serve", "m-serve"]);
      for (const request of hook.requests) expectStandardSigned(request);
    } finally {
      await serve.stop();
    }
  });

  it("with no webhook, its embedded receiver checks the Standard Webhooks headers of what it delivers", async () => {
    const serve = await startServe(["--scheme", "standard"], { cwd: await makeTempDir(), env: { WH_SHARED_SECRET: undefined } });
    try {
      const event = { type: "track", event: "Order Completed", userId: "u1" };
      expect(
        (await postToServe(serve.url, "/v1/track", JSON.stringify(event), { "content-type": "application/json", authorization: basic("wk-std") })).status,
      ).toBe(200);
      const stdout = await serve.waitForStdout((text) => text.includes('"signature"'));
      const received = lines(stdout)
        .map((line) => JSON.parse(line) as { signature?: string; status?: number })
        .find((record) => record.signature !== undefined);
      expect(received).toMatchObject({ signature: "valid", status: 200 });
    } finally {
      await serve.stop();
    }
  });
});
