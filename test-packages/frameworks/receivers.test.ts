import { once } from "node:events";
import { createServer } from "node:http";
import { connect } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  createWebhookSender,
  expressWebhook,
  fastifyWebhook,
  honoWebhook,
  nextWebhook,
  nodeWebhook,
  signBody,
  UsageError,
  verifyRequest,
  webhookOf,
} from "../../src/index.js";
import { closeServer, serverUrl } from "../../test/helpers/http-server.js";
import { APPS, post, type RunningApp } from "./receiver-apps.js";

// Each receiver adapter in the real framework, in a real server on 127.0.0.1: a request signed by
// wh's own sender passes; the same body re-serialised, a tampered one, or one without a signature
// is answered 401 with a short JSON reason, and the app's handler never runs.

const SECRET = "whsec-test";
const EVENT = '{"type":"track","userId":"u1","event":"Order Completed","properties":{"total":99.5,"note":"é"}}';
const FORGED = { type: "track", event: "Forged Refund", properties: { amount: 1000000 } };
/** One signed event with an event of anyone's after it, under the event's own signature. */
const FORGED_BATCHES = {
  compact: `[${EVENT},${JSON.stringify(FORGED)}]`,
  "first event pretty-printed": `[\n${JSON.stringify(JSON.parse(EVENT), null, 2)},\n${JSON.stringify(FORGED)}]`,
};

describe.each(Object.keys(APPS))("the %s adapter", (name) => {
  let running: RunningApp;
  let batches: RunningApp;
  beforeAll(async () => {
    const make = APPS[name] as (typeof APPS)[string];
    running = await make({ secret: SECRET });
    batches = await make({ secret: SECRET, batches: true });
  });
  afterAll(async () => {
    await running?.close();
    await batches?.close();
  });

  it("hands the app a request wh's sender signed: the parsed body and the raw bytes", async () => {
    const sender = await createWebhookSender({ webhooks: running.url, sharedSecret: SECRET, maxAttempts: 1 });
    try {
      const report = await sender.send(EVENT);
      expect(report.outcome).toBe("delivered");
      expect(report.targets[0]?.last).toMatchObject({ kind: "response", status: 200 });
    } finally {
      await sender.close();
    }
    const checked = await post(running.url, EVENT, { "X-Signature": signBody(SECRET, EVENT) });
    expect(checked).toEqual({ status: 200, json: { body: JSON.parse(EVENT), raw: Buffer.byteLength(EVENT), kind: "single" } });
  });

  it.each(Object.entries(FORGED_BATCHES))("refuses a batch forged from one signed event (%s) unless the route takes batches", async (_, forged) => {
    const handled = running.handled;
    const refused = await post(running.url, forged, { "X-Signature": signBody(SECRET, EVENT) });
    expect(refused.status).toBe(400);
    if (name === "fastify") expect(refused.json).toMatchObject({ statusCode: 400, message: "batch not accepted (batch-refused)" });
    else expect(refused.json).toEqual({ error: "batch not accepted", reason: "batch-refused" });
    expect(running.handled).toBe(handled);
  });

  it("with batches: true, hands the app an Actions batch with its unsigned events apart", async () => {
    const sender = await createWebhookSender({ webhooks: batches.url, sharedSecret: SECRET, mode: "actions", maxAttempts: 1 });
    try {
      expect((await sender.send(FORGED_BATCHES.compact)).outcome).toBe("delivered");
    } finally {
      await sender.close();
    }
    const forged = FORGED_BATCHES["first event pretty-printed"];
    const checked = await post(batches.url, forged, { "X-Signature": signBody(SECRET, EVENT) });
    // What the framework parsed itself (Express's req.body, Fastify's request.body, Hono's c.req.json()) is the whole array.
    const body = name === "node:http" || name.startsWith("next") ? undefined : JSON.parse(forged);
    expect(checked).toEqual({ status: 200, json: { kind: "batch", body, raw: Buffer.byteLength(forged), signed: JSON.parse(EVENT), unsigned: [FORGED] } });
    const single = await post(batches.url, EVENT, { "X-Signature": signBody(SECRET, EVENT) });
    expect(single).toMatchObject({ status: 200, json: { kind: "single", body: JSON.parse(EVENT) } });
  });

  it("answers 401 to the body re-serialised, a tampered body, and no signature, before the app sees them", async () => {
    const handled = running.handled;
    const signature = signBody(SECRET, EVENT);
    const reserialised = await post(running.url, JSON.stringify(JSON.parse(EVENT), null, 2), { "X-Signature": signature });
    const tampered = await post(running.url, EVENT.replace("99.5", "0.01"), { "X-Signature": signature });
    const unsigned = await post(running.url, EVENT, {});
    const malformed = await post(running.url, EVENT, { "X-Signature": "sha1=abc" });

    for (const refused of [reserialised, tampered, unsigned, malformed]) expect(refused.status).toBe(401);
    const reasons = [reserialised, tampered, unsigned, malformed].map(({ json }) => JSON.stringify(json));
    if (name === "fastify") {
      // Fastify's error handler answers the thrown WebhookRejection: its statusCode and message.
      expect(reserialised.json).toMatchObject({ statusCode: 401, message: "invalid signature (mismatch)" });
      expect(unsigned.json).toMatchObject({ statusCode: 401, message: "invalid signature (missing-signature)" });
    } else {
      expect(reasons).toEqual([
        '{"error":"invalid signature","reason":"mismatch"}',
        '{"error":"invalid signature","reason":"mismatch"}',
        '{"error":"invalid signature","reason":"missing-signature"}',
        '{"error":"invalid signature","reason":"malformed-signature"}',
      ]);
    }
    expect(running.handled).toBe(handled);
  });

  it("answers 400 to a signed body that is not JSON, and 413 to one over the limit", async () => {
    const notJson = "not json";
    expect((await post(running.url, notJson, { "X-Signature": signBody(SECRET, notJson) })).status).toBe(400);
    const huge = JSON.stringify({ type: "track", pad: "x".repeat(6 * 1024 * 1024) });
    const response = await fetch(running.url, { method: "POST", headers: { "X-Signature": signBody(SECRET, huge) }, body: huge });
    expect(response.status).toBe(413);
  });
});

describe("the adapters' options", () => {
  it("refuse a missing or empty secret when the adapter is made, never accepting everything", () => {
    for (const make of [() => nodeWebhook({ secret: "" }, () => undefined), () => expressWebhook({ secret: "" }), () => honoWebhook({ secret: "" })]) {
      expect(make).toThrow("secret is missing or empty: a webhook receiver needs the destination's shared secret");
    }
    expect(() => fastifyWebhook({ secret: undefined as unknown as string })).toThrow(/secret is missing/);
    expect(() => nextWebhook({ secret: SECRET, maxBytes: 0 }, () => new Response())).toThrow(
      "maxBytes must be a positive whole number of bytes (got number 0)",
    );
    expect(() => webhookOf({})).toThrow(/no verified webhook for this request/);
  });

  it("Express: after express.raw() it verifies the Buffer; after express.json() it says the raw bytes are gone", async () => {
    const app = express();
    app.post("/raw", express.raw({ type: "application/json" }), expressWebhook({ secret: SECRET }), (request, response) => response.json(request.body));
    app.post("/json", express.json(), expressWebhook({ secret: SECRET }), (_request, response) => response.json({}));
    const errors: string[] = [];
    app.use((error: Error, _request: express.Request, response: express.Response, _next: express.NextFunction) => {
      errors.push(error.message);
      response.status(500).json({ error: "server" });
    });
    const server = app.listen(0, "127.0.0.1");
    const base = (await serverUrl(server)).replace("/hook", "");
    try {
      const headers = { "X-Signature": signBody(SECRET, EVENT) };
      expect(await post(`${base}/raw`, EVENT, headers)).toEqual({ status: 200, json: JSON.parse(EVENT) });
      expect((await post(`${base}/json`, EVENT, headers)).status).toBe(500);
      expect(errors).toEqual(["the request body was parsed before the webhook middleware: mount it before express.json(), or use express.raw()"]);
    } finally {
      await closeServer(server);
    }
  });
});

describe("verifyRequest", () => {
  const signature = signBody(SECRET, EVENT);

  it("reads X-Signature from fetch Headers or a plain object in any case, and verifies a string or bytes", () => {
    const verified = { ok: true, webhook: { body: JSON.parse(EVENT), raw: Buffer.from(EVENT), kind: "single" } };
    expect(verifyRequest({ body: EVENT, headers: new Headers({ "X-Signature": signature }), secret: SECRET })).toEqual(verified);
    expect(verifyRequest({ body: Buffer.from(EVENT), headers: { "X-SIGNATURE": signature }, secret: SECRET })).toEqual(verified);
    expect(verifyRequest({ body: new TextEncoder().encode(EVENT), headers: { "x-signature": [signature] }, secret: SECRET })).toMatchObject({ ok: true });
  });

  it("takes a repeated X-Signature for a malformed one, and the wrong secret for a mismatch", () => {
    const refused = (status: number, reason: string) => ({ ok: false, status, reason });
    expect(verifyRequest({ body: EVENT, headers: { "x-signature": [signature, signature] }, secret: SECRET })).toEqual(refused(401, "malformed-signature"));
    expect(
      verifyRequest({
        body: EVENT,
        headers: new Headers([
          ["X-Signature", signature],
          ["X-Signature", signature],
        ]),
        secret: SECRET,
      }),
    ).toEqual(refused(401, "malformed-signature"));
    expect(verifyRequest({ body: EVENT, headers: { "x-signature": signature }, secret: "other" })).toEqual(refused(401, "mismatch"));
    expect(verifyRequest({ body: EVENT, headers: {}, secret: SECRET })).toEqual(refused(401, "missing-signature"));
  });

  it("refuses an array body unless batches is true, before checking or parsing it", () => {
    const headers = { "x-signature": signature };
    for (const forged of Object.values(FORGED_BATCHES)) {
      expect(verifyRequest({ body: forged, headers, secret: SECRET })).toEqual({ ok: false, status: 400, reason: "batch-refused" });
      expect(verifyRequest({ body: forged, headers, secret: SECRET, batches: true })).toEqual({
        ok: true,
        webhook: { kind: "batch", signed: JSON.parse(EVENT), unsigned: [FORGED], raw: Buffer.from(forged) },
      });
    }
    // Nothing unverified is parsed on a route that takes no batches: an array is refused as it starts.
    const parse = vi.spyOn(JSON, "parse");
    try {
      const array = ` \n[${'{"type":"track"},'.repeat(100_000)}{}]`;
      expect(verifyRequest({ body: array, headers, secret: SECRET })).toMatchObject({ reason: "batch-refused" });
      expect(verifyRequest({ body: EVENT.replace("u1", "u2"), headers, secret: SECRET, batches: true })).toMatchObject({ reason: "mismatch" });
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it("throws on an empty secret, as the adapters do, rather than accept a body signed with the empty key", () => {
    const headers = { "x-signature": signBody("", EVENT) };
    expect(() => verifyRequest({ body: EVENT, headers, secret: "" })).toThrow(UsageError);
    expect(() => verifyRequest({ body: EVENT, headers, secret: "" })).toThrow("secret is missing or empty");
  });
});

describe("nodeWebhook", () => {
  it("answers 500 when the app's handler fails, and reports the error as a process warning", async () => {
    const warnings: unknown[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    const server = createServer(
      nodeWebhook({ secret: SECRET }, async () => {
        throw new Error("the app broke");
      }),
    ).listen(0, "127.0.0.1");
    try {
      const response = await fetch(await serverUrl(server), { method: "POST", headers: { "X-Signature": signBody(SECRET, EVENT) }, body: EVENT });
      expect(response.status).toBe(500);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toContain("the app broke");
    } finally {
      process.off("warning", onWarning);
      await closeServer(server);
    }
  });
});

/** Sends half of a declared body, then hangs up; resolves when the server has seen the request close. */
async function hangUpMidBody(url: string, closed: Promise<unknown>): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  const head = `POST /hook HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nX-Signature: ${signBody(SECRET, EVENT)}\r\nContent-Length: 1000\r\n\r\n`;
  socket.write(`${head}{"type":"track",`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  await closed;
  // The adapter's own handling of the hang-up runs after the request's close.
  await new Promise((resolve) => setTimeout(resolve, 50));
}

describe("a client that hangs up mid-body", () => {
  it("is no failure of the app: nodeWebhook warns nothing, Express passes no error on", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    const errors: string[] = [];
    const app = express();
    app.post("/hook", expressWebhook({ secret: SECRET }), (_request, response) => response.json({}));
    app.use((error: Error, _request: express.Request, response: express.Response, _next: express.NextFunction) => {
      errors.push(error.message);
      response.status(500).end();
    });
    const handled: string[] = [];
    const plain = createServer(nodeWebhook({ secret: SECRET }, () => void handled.push("node"))).listen(0, "127.0.0.1");
    const expressServer = app.listen(0, "127.0.0.1");
    try {
      for (const server of [plain, expressServer]) {
        const closed = new Promise((resolve) => server.once("request", (request) => request.once("close", resolve)));
        await hangUpMidBody(await serverUrl(server), closed);
      }
      expect({ warnings, errors, handled }).toEqual({ warnings: [], errors: [], handled: [] });
    } finally {
      process.off("warning", onWarning);
      await closeServer(plain);
      await closeServer(expressServer);
    }
  });
});
