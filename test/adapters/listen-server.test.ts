import { createHmac } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startReceiver, type ReceivedRequest, type Receiver, type ReceiverOptions } from "../../src/adapters/listen-server.js";
import { createHarness, deliver, targetOf } from "../integration/support.js";

const SECRET = "listen-secret";
const BODY = '{"version":1,"type":"track","userId":"u1","event":"Heard","properties":{"x":"é"},"timestamp":"2026-11-21T09:30:08.276Z"}';
const sign = (body: string | Buffer, secret = SECRET): string => createHmac("sha1", secret).update(body).digest("hex");

describe("startReceiver, the local receiver behind wh listen", () => {
  const harness = createHarness();
  let agent: Agent;
  let dir: string;
  const receivers: Receiver[] = [];
  let seen: ReceivedRequest[];

  beforeEach(async () => {
    agent = new Agent();
    dir = await mkdtemp(join(tmpdir(), "wh-receiver-"));
    seen = [];
  });
  afterEach(async () => {
    await Promise.all([agent.close(), harness.close(), ...receivers.splice(0).map((receiver) => receiver.close())]);
    await rm(dir, { recursive: true, force: true });
  });

  async function start(options: Omit<ReceiverOptions, "onRequest"> = {}): Promise<Receiver> {
    const receiver = await startReceiver({ ...options, onRequest: (request) => seen.push(request) });
    receivers.push(receiver);
    return receiver;
  }

  /** A raw request from outside wh, so the receiver is checked on bytes wh did not produce. */
  async function send(receiver: Receiver, init: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<number> {
    const url = new URL(receiver.url);
    const response = await agent.request({
      origin: url.origin,
      path: "/",
      method: (init.method ?? "POST") as "POST",
      headers: { "content-type": "application/json", ...init.headers },
      body: init.body,
    });
    await response.body.dump();
    return response.statusCode;
  }

  it("answers 200 to a POST signed by deliverMessage and reports the signature valid", async () => {
    const receiver = await start({ secret: SECRET });
    const { report } = await deliver(BODY, { targets: [targetOf(receiver.url)], transport: harness.transport(), sharedSecret: SECRET });

    expect(report).toMatchObject({ outcome: "delivered", attempts: 1 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "POST", signature: "valid", status: 200, json: JSON.parse(BODY) });
    expect(seen[0]?.body.equals(Buffer.from(BODY))).toBe(true);
  });

  it("answers 200 to a POST signed outside wh, in lower or upper case hex", async () => {
    const receiver = await start({ secret: SECRET });

    expect(await send(receiver, { body: BODY, headers: { "X-Signature": sign(BODY) } })).toBe(200);
    expect(await send(receiver, { body: BODY, headers: { "X-Signature": sign(BODY).toUpperCase() } })).toBe(200);
    expect(seen.map((request) => request.signature)).toEqual(["valid", "valid"]);
  });

  it.each([
    ["the signature of other bytes", sign(`${BODY}\n`)],
    ["a signature made with another secret", sign(BODY, "other-secret")],
    ["a signature that is not 40 hex characters", "not-a-signature"],
  ])("answers 401 to %s and reports it invalid", async (_name, signature) => {
    const receiver = await start({ secret: SECRET });

    expect(await send(receiver, { body: BODY, headers: { "X-Signature": signature } })).toBe(401);
    expect(seen).toEqual([expect.objectContaining({ signature: "invalid", status: 401 })]);
  });

  it("answers 401 to a POST without a signature and reports it missing", async () => {
    const receiver = await start({ secret: SECRET });

    expect(await send(receiver, { body: BODY })).toBe(401);
    expect(seen).toEqual([expect.objectContaining({ signature: "missing", status: 401 })]);
  });

  it("accepts any POST without checking when it has no secret, and reports it unchecked", async () => {
    const receiver = await start();

    expect(await send(receiver, { body: BODY, headers: { "X-Signature": "0".repeat(40) } })).toBe(200);
    expect(await send(receiver, { body: BODY })).toBe(200);
    expect(seen.map((request) => [request.signature, request.status])).toEqual([
      ["unchecked", 200],
      ["unchecked", 200],
    ]);
  });

  it("answers the configured status to a request that passes the checks, and 401 still to one that does not", async () => {
    const receiver = await start({ secret: SECRET, status: 503 });

    expect(await send(receiver, { body: BODY, headers: { "X-Signature": sign(BODY) } })).toBe(503);
    expect(await send(receiver, { body: BODY, headers: { "X-Signature": sign("other") } })).toBe(401);
    expect(seen.map((request) => [request.signature, request.status])).toEqual([
      ["valid", 503],
      ["invalid", 401],
    ]);
  });

  it("answers 400 to a body that is not JSON and does not capture it", async () => {
    const out = join(dir, "captured.ndjson");
    const receiver = await start({ out });

    expect(await send(receiver, { body: "not json {" })).toBe(400);
    expect(await send(receiver, { body: "" })).toBe(400);
    await receiver.close();

    expect(seen.map((request) => [request.status, request.captured, request.json])).toEqual([
      [400, false, undefined],
      [400, false, undefined],
    ]);
    expect(await readFile(out, "utf8")).toBe("");
  });

  it("answers 405 to a GET", async () => {
    const receiver = await start({ secret: SECRET });

    expect(await send(receiver, { method: "GET" })).toBe(405);
    expect(seen).toEqual([expect.objectContaining({ method: "GET", status: 405, captured: false })]);
  });

  it("appends each accepted request to the out file as a capture record holding its exact bytes", async () => {
    const out = join(dir, "captured.ndjson");
    await writeFile(out, '{"earlier":true}\n');
    const receiver = await start({ secret: SECRET, out });
    const spaced = '{ "b" : "é ☕ \\u2028",   "a":[1, 2.50, 1e3] }';

    await deliver(BODY, { targets: [targetOf(receiver.url)], transport: harness.transport(), sharedSecret: SECRET });
    expect(await send(receiver, { body: spaced, headers: { "X-Signature": sign(spaced) } })).toBe(200);
    expect(await send(receiver, { body: '{"rejected":true}', headers: { "X-Signature": sign("x") } })).toBe(401);
    await receiver.close();

    expect(seen.map((request) => request.captured)).toEqual([true, true, false]);
    const [earlier, ...records] = (await readFile(out, "utf8")).trimEnd().split("\n");
    expect(earlier).toBe('{"earlier":true}');
    const captured = records.map((line) => JSON.parse(line) as { method: string; body: string; headers: Record<string, string> });
    expect(captured.map((record) => record.body)).toEqual([BODY, spaced]);
    expect(captured[1]).toMatchObject({ method: "POST", headers: { "x-signature": sign(spaced) } });
  });

  it("keeps a multi-line body whole in one capture record, and a batch as one record per event", async () => {
    const out = join(dir, "captured.ndjson");
    const receiver = await start({ out });
    const pretty = JSON.stringify({ type: "track", event: "Pretty", properties: { a: 1 } }, null, 2);
    const batch = JSON.stringify([
      { type: "track", event: "A" },
      { type: "track", event: "B" },
    ]);

    expect(await send(receiver, { body: pretty })).toBe(200);
    expect(await send(receiver, { body: batch })).toBe(200);
    await receiver.close();

    const records = (await readFile(out, "utf8"))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { body: string; batch?: unknown });
    expect(records.map((record) => [record.body, record.batch])).toEqual([
      [pretty, undefined],
      ['{"type":"track","event":"A"}', { index: 0, count: 2 }],
      ['{"type":"track","event":"B"}', { index: 1, count: 2 }],
    ]);
  });

  it("captures nothing when it answers a non-2xx status", async () => {
    const out = join(dir, "captured.ndjson");
    const receiver = await start({ out, status: 503 });

    expect(await send(receiver, { body: BODY })).toBe(503);
    await receiver.close();

    expect(seen).toEqual([expect.objectContaining({ status: 503, captured: false })]);
    expect(await readFile(out, "utf8")).toBe("");
  });
});
