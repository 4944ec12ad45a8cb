import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../helpers/in-process.js";
import { closedAfterEach, type RecordedRequest } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "./run-wh.js";

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
