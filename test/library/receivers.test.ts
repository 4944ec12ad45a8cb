import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { NextRequest } from "next/server.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createWebhookSender,
  expressWebhook,
  fastifyWebhook,
  honoWebhook,
  nextWebhook,
  nodeWebhook,
  signBody,
  verifyRequest,
  webhookOf,
} from "../../src/index.js";

// Each receiver adapter in the real framework, in a real server on 127.0.0.1: a request signed by
// wh's own sender passes; the same body re-serialised, a tampered one, or one without a signature
// is answered 401 with a short JSON reason, and the app's handler never runs.

const SECRET = "whsec-test";
const EVENT = '{"type":"track","userId":"u1","event":"Order Completed","properties":{"total":99.5,"note":"é"}}';

interface Running {
  url: string;
  handled: number;
  close(): Promise<void>;
}

/** What every app answers a verified webhook with: the parsed body it got, the raw byte count, the kind. */
const answer = (body: unknown, raw: Uint8Array, kind: string) => ({ body, raw: raw.byteLength, kind });

async function listening(server: Server): Promise<string> {
  if (!server.listening) await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}

const FRAMEWORKS: Record<string, () => Promise<Running>> = {
  "node:http": async () => {
    const running = { handled: 0 } as Running;
    const server = createServer(
      nodeWebhook({ secret: SECRET }, (webhook, request, response) => {
        running.handled += 1;
        expect(webhookOf(request)).toBe(webhook);
        response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(answer(webhook.body, webhook.raw, webhook.kind)));
      }),
    ).listen(0, "127.0.0.1");
    return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
  },
  express: async () => {
    const running = { handled: 0 } as Running;
    const app = express();
    app.post("/hook", expressWebhook({ secret: SECRET }), (request, response) => {
      running.handled += 1;
      const { raw, kind } = webhookOf(request);
      response.json(answer(request.body, raw, kind));
    });
    const server = app.listen(0, "127.0.0.1");
    return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
  },
  fastify: async () => {
    const running = { handled: 0 } as Running;
    const app = Fastify();
    app.post("/hook", fastifyWebhook({ secret: SECRET }), async (request) => {
      running.handled += 1;
      const { raw, kind } = webhookOf(request);
      return answer(request.body, raw, kind);
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    return Object.assign(running, { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/hook`, close: () => app.close() });
  },
  hono: async () => {
    const running = { handled: 0 } as Running;
    const app = new Hono();
    app.post("/hook", honoWebhook({ secret: SECRET }), async (c) => {
      running.handled += 1;
      const { raw, kind } = webhookOf(c.req.raw);
      return c.json(answer(await c.req.json(), raw, kind));
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
    return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
  },
  "next (route handler in node:http)": async () => {
    // The handler as Next calls it: a NextRequest (next/server) in, a Response out.
    const running = { handled: 0 } as Running;
    const POST = nextWebhook({ secret: SECRET }, (webhook, request: NextRequest) => {
      running.handled += 1;
      expect(request.nextUrl.pathname).toBe("/hook");
      return Response.json(answer(webhook.body, webhook.raw, webhook.kind));
    });
    const server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const headers = new Headers(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      const answered = await POST(
        new NextRequest(`http://${request.headers.host}${request.url}`, { method: "POST", headers, body: Buffer.concat(chunks) }),
        {},
      );
      response.writeHead(answered.status, Object.fromEntries(answered.headers)).end(Buffer.from(await answered.arrayBuffer()));
    }).listen(0, "127.0.0.1");
    return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
  },
};

const post = async (url: string, body: string, headers: Record<string, string>) => {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
  return { status: response.status, json: (await response.json()) as unknown };
};

describe.each(Object.keys(FRAMEWORKS))("the %s adapter", (name) => {
  let running: Running;
  beforeAll(async () => {
    running = await (FRAMEWORKS[name] as () => Promise<Running>)();
  });
  afterAll(async () => {
    await running?.close();
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

  it("accepts an Actions batch signed over its first event", async () => {
    const batch = `[${EVENT},{"type":"track","userId":"u2","event":"Other"}]`;
    const checked = await post(running.url, batch, { "X-Signature": signBody(SECRET, JSON.stringify(JSON.parse(EVENT))) });
    expect(checked).toMatchObject({ status: 200, json: { kind: "batch", body: JSON.parse(batch) } });
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
    expect(() => nextWebhook({ secret: SECRET, maxBytes: 0 }, () => new Response())).toThrow("maxBytes must be a positive number of bytes (got 0)");
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
    const base = (await listening(server)).replace("/hook", "");
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
      const response = await fetch(await listening(server), { method: "POST", headers: { "X-Signature": signBody(SECRET, EVENT) }, body: EVENT });
      expect(response.status).toBe(500);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toContain("the app broke");
    } finally {
      process.off("warning", onWarning);
      await closeServer(server);
    }
  });
});
