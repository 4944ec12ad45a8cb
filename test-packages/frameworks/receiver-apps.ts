import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { NextRequest } from "next/server.js";
import { expect } from "vitest";
import { closeServer, serverUrl as listening } from "../../test/helpers/http-server.js";
import { expressWebhook, fastifyWebhook, honoWebhook, nextWebhook, nodeWebhook, type WebhookOptions, webhookOf } from "../../src/index.js";

// Each receiver adapter mounted in its real framework, in a real server on 127.0.0.1. Every app
// answers a verified webhook with what it got: the kind, the body its framework handed it, the raw
// byte count, and a batch's signed and unsigned parts.

export interface RunningApp {
  url: string;
  handled: number;
  close(): Promise<void>;
}

type Webhook = ReturnType<typeof webhookOf>;

/** What every app answers a verified webhook with. */
const answer = (webhook: Webhook, body: unknown) =>
  webhook.kind === "single"
    ? { kind: webhook.kind, body, raw: webhook.raw.byteLength }
    : { kind: webhook.kind, body, raw: webhook.raw.byteLength, signed: webhook.signed, unsigned: webhook.unsigned };

type Options = WebhookOptions<boolean>;

async function nodeApp(options: Options): Promise<RunningApp> {
  const running = { handled: 0 } as RunningApp;
  const server = createServer(
    nodeWebhook(options, (webhook, request, response) => {
      running.handled += 1;
      expect(webhookOf(request)).toBe(webhook);
      const body = webhook.kind === "single" ? webhook.body : undefined;
      response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(answer(webhook, body)));
    }),
  ).listen(0, "127.0.0.1");
  return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
}

async function expressApp(options: Options): Promise<RunningApp> {
  const running = { handled: 0 } as RunningApp;
  const app = express();
  app.post("/hook", expressWebhook(options), (request, response) => {
    running.handled += 1;
    response.json(answer(webhookOf(request), request.body));
  });
  const server = app.listen(0, "127.0.0.1");
  return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
}

async function fastifyApp(options: Options): Promise<RunningApp> {
  const running = { handled: 0 } as RunningApp;
  const app = Fastify();
  app.post("/hook", fastifyWebhook(options), async (request) => {
    running.handled += 1;
    return answer(webhookOf(request), request.body);
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return Object.assign(running, { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/hook`, close: () => app.close() });
}

async function honoApp(options: Options): Promise<RunningApp> {
  const running = { handled: 0 } as RunningApp;
  const app = new Hono();
  app.post("/hook", honoWebhook(options), async (c) => {
    running.handled += 1;
    return c.json(answer(webhookOf(c.req.raw), await c.req.json()));
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
  return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
}

/** The route handler as Next calls it: a NextRequest whose body streams from the connection, a Response out. */
async function nextApp(options: Options): Promise<RunningApp> {
  const running = { handled: 0 } as RunningApp;
  const POST = nextWebhook(options, (webhook, request: NextRequest) => {
    running.handled += 1;
    expect(request.nextUrl.pathname).toBe("/hook");
    return Response.json(answer(webhook, webhook.kind === "single" ? webhook.body : undefined));
  });
  const server = createServer(async (request, response) => {
    const headers = new Headers(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    const body = Readable.toWeb(request) as ReadableStream<Uint8Array>;
    const init = { method: "POST", headers, body, duplex: "half" as const };
    const answered = await POST(new NextRequest(`http://${request.headers.host}${request.url}`, init), {});
    response.writeHead(answered.status, Object.fromEntries(answered.headers)).end(Buffer.from(await answered.arrayBuffer()));
  }).listen(0, "127.0.0.1");
  return Object.assign(running, { url: await listening(server), close: () => closeServer(server) });
}

export const APPS: Record<string, (options: Options) => Promise<RunningApp>> = {
  "node:http": nodeApp,
  express: expressApp,
  fastify: fastifyApp,
  hono: honoApp,
  "next (route handler in node:http)": nextApp,
};

export const post = async (url: string, body: string, headers: Record<string, string>) => {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
  return { status: response.status, json: (await response.json()) as unknown };
};

export interface Upload {
  /** The status answered, if one came. */
  status: number | undefined;
  /** The bytes of body the client had written when the answer came or the connection closed. */
  sent: number;
  /** Why the connection ended without an answer, if it did. */
  error?: string;
}

/**
 * POSTs `total` bytes of body in 64 KiB chunks, chunked or with its Content-Length declared,
 * writing only as fast as the server reads, and stops at the first answer or when the connection
 * closes: how much a server read before it answered is what the client got to send.
 */
export function upload(url: string, total: number, headers: Record<string, string>, declared: boolean): Promise<Upload> {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const lengthHeader = declared ? { "Content-Length": String(total) } : { "Transfer-Encoding": "chunked" };
  return new Promise((resolve) => {
    let sent = 0;
    let status: number | undefined;
    let done = false;
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      client.destroy();
      resolve(status === undefined ? { status, sent, error: (error as NodeJS.ErrnoException | undefined)?.code ?? "closed" } : { status, sent });
    };
    const client = httpRequest(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers, ...lengthHeader }, agent: false });
    client.on("response", (response) => {
      status = response.statusCode;
      finish();
    });
    client.on("error", finish);
    client.on("close", () => finish());
    const write = () => {
      while (!done && sent < total) {
        sent += chunk.byteLength;
        if (!client.write(chunk)) return void client.once("drain", write);
      }
      if (!done) client.end();
    };
    write();
  });
}

/**
 * The upload was refused early: fewer than `bound` bytes written, and a 413, or the connection
 * reset. A server that closes a connection it has stopped reading makes its kernel reset it, and
 * a reset can overtake the 413 on its way to the client's reader (rarely here, 1 run in 5 against
 * next start): what tells a server that stopped reading from one that did not is what was written.
 */
export function expectRefusedEarly(result: Upload, bound: number): void {
  expect(result.sent).toBeLessThan(bound);
  expect([413, "ECONNRESET", "EPIPE"]).toContain(result.status ?? result.error);
}
