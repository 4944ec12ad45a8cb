import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signBody } from "../../src/index.js";
import { tracked } from "../../test/helpers/children.js";
import { expectRefusedEarly, upload } from "./receiver-apps.js";
import { installPacked, type PackedPackage } from "../../test/integration/packed-package.js";

// The receiver adapters from the packed package, as an app imports them: a strict TypeScript
// project against each framework's own types, run in real servers on 127.0.0.1; and a real
// Next.js app (next build, next start) with a route handler. Needs `npm run build` first.

/** This test package's node_modules, where the frameworks are installed. */
const INSTALLED = fileURLToPath(new URL("node_modules", import.meta.url));
const FRAMEWORKS = ["express", "@types/express", "fastify", "hono", "@hono/node-server", "next", "react", "react-dom"];
const SECRET = "whsec-consumer";
const EVENT = '{"type":"identify","userId":"u1","traits":{"plan":"pro"}}';

let packed: PackedPackage;
beforeAll(async () => {
  packed = await installPacked(FRAMEWORKS, INSTALLED);
});
afterAll(async () => {
  await packed?.remove();
});

/** Each app's answer to a verified request: its kind and parsed body. */
const SERVERS = `import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { expressWebhook, fastifyWebhook, honoWebhook, nodeWebhook, webhookOf } from "wh";

const secret = process.env.SECRET as string;
const port = (server: Server) => (server.address() as AddressInfo).port;

const plain = createServer(nodeWebhook({ secret }, (webhook, _request, response) => {
  response.end(JSON.stringify({ kind: webhook.kind, body: webhook.body }));
})).listen(0, "127.0.0.1");

// With batches: true the webhook is either kind, and a batch has no body: its parts are named.
const batches = createServer(nodeWebhook({ secret, batches: true }, (webhook, _request, response) => {
  const parts = webhook.kind === "batch" ? { signed: webhook.signed, unsigned: webhook.unsigned } : { body: webhook.body };
  response.end(JSON.stringify({ kind: webhook.kind, ...parts }));
})).listen(0, "127.0.0.1");

const app = express();
app.post("/hook", expressWebhook({ secret }), (request, response) => {
  response.json({ kind: webhookOf(request).kind, body: request.body });
});
const expressServer = app.listen(0, "127.0.0.1");

const fastify = Fastify();
fastify.post("/hook", fastifyWebhook({ secret }), async (request) => ({ kind: webhookOf(request).kind, body: request.body }));
await fastify.listen({ port: 0, host: "127.0.0.1" });

const hono = new Hono();
hono.post("/hook", honoWebhook({ secret }), async (c) => c.json({ kind: webhookOf(c.req.raw).kind, body: await c.req.json() }));
const honoServer = serve({ fetch: hono.fetch, port: 0, hostname: "127.0.0.1" }) as Server;

await new Promise((resolve) => setTimeout(resolve, 100));
console.log(JSON.stringify({ batches: port(batches), "node:http": port(plain), express: port(expressServer), fastify: port(fastify.server), hono: port(honoServer) }));
`;

/** The route handler, type-checked here with Next's types; the Next app runs the same code as JavaScript. */
const ROUTE = `import { nextWebhook } from "wh";
import type { NextRequest } from "next/server.js";

export const POST = nextWebhook({ secret: process.env.SECRET as string }, (webhook, request: NextRequest) =>
  Response.json({ kind: webhook.kind, body: webhook.body, path: request.nextUrl.pathname }),
);
`;

/** One signed event with an event of anyone's after it, under the event's own signature. */
const FORGED_BATCH = `[${EVENT},{"type":"track","event":"Forged Refund","properties":{"amount":1000000}}]`;

async function postAll(url: string): Promise<{ signed: unknown; reserialised: number; tampered: number; unsigned: number; forged: number }> {
  const post = (body: string, headers: Record<string, string>) =>
    fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
  const signature = { "X-Signature": signBody(SECRET, EVENT) };
  const signed = await post(EVENT, signature);
  return {
    signed: { status: signed.status, ...((await signed.json()) as object) },
    reserialised: (await post(JSON.stringify(JSON.parse(EVENT), null, 1), signature)).status,
    tampered: (await post(EVENT.replace("pro", "free"), signature)).status,
    unsigned: (await post(EVENT, {})).status,
    forged: (await post(FORGED_BATCH, signature)).status,
  };
}

describe("the receiver adapters from the packed package", () => {
  it("type-check against Express, Fastify, Hono and Next's types, and each verifies in a real server", async () => {
    const project = await packed.project("receivers", { type: "module", skipLibCheck: true, files: { "servers.ts": SERVERS, "route.ts": ROUTE } });
    project.compile();
    const child = tracked(
      spawn(process.execPath, [join(project.dir, "out", "servers.js")], { env: { ...process.env, SECRET }, stdio: ["ignore", "pipe", "inherit"] }),
    );
    try {
      const [line] = (await once(child.stdout, "data")) as [Buffer];
      const { batches, ...ports } = JSON.parse(line.toString()) as Record<string, number>;
      const batch = await fetch(`http://127.0.0.1:${batches}/hook`, {
        method: "POST",
        headers: { "X-Signature": signBody(SECRET, EVENT) },
        body: FORGED_BATCH,
      });
      expect(await batch.json()).toEqual({ kind: "batch", signed: JSON.parse(EVENT), unsigned: [JSON.parse(FORGED_BATCH)[1]] });
      for (const [name, port] of Object.entries(ports)) {
        expect({ name, ...(await postAll(`http://127.0.0.1:${port}/hook`)) }).toEqual({
          name,
          signed: { status: 200, kind: "single", body: JSON.parse(EVENT) },
          reserialised: 401,
          tampered: 401,
          unsigned: 401,
          forged: 400,
        });
      }
    } finally {
      child.kill();
    }
  });

  it("verifies in a real Next.js app: next build, next start, the route handler of app/hook/route.js", async () => {
    const app = join(packed.dir, "next-app");
    await mkdir(join(app, "app", "hook"), { recursive: true });
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "next-app", private: true, type: "module" }));
    await writeFile(join(app, "app", "layout.js"), "export default function Layout({ children }) { return children; }\n");
    await writeFile(
      join(app, "app", "hook", "route.js"),
      ROUTE.replace('import type { NextRequest } from "next/server.js";\n', "").replace("request: NextRequest", "request").replace(" as string", ""),
    );
    const next = join(INSTALLED, "next", "dist", "bin", "next");
    const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", SECRET };
    // webpack, not Turbopack: Turbopack refuses packages linked from outside the app (this test links them).
    execFileSync(process.execPath, [next, "build", "--webpack"], { cwd: app, env, stdio: "pipe" });
    const port = await freePort();
    const server: ChildProcess = tracked(
      spawn(process.execPath, [next, "start", "--port", String(port), "--hostname", "127.0.0.1"], {
        cwd: app,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        server.stdout?.on("data", (chunk: Buffer) => chunk.toString().includes("Ready") && resolve());
        server.once("exit", (code) => reject(new Error(`next start exited ${code}`)));
      });
      expect(await postAll(`http://127.0.0.1:${port}/hook`)).toEqual({
        signed: { status: 200, kind: "single", body: JSON.parse(EVENT), path: "/hook" },
        reserialised: 401,
        tampered: 401,
        unsigned: 401,
        forged: 400,
      });
      // Next hands the route the body as a stream: past the 5 MiB limit it is no longer read.
      const chunked = await upload(`http://127.0.0.1:${port}/hook`, 256 * 1024 * 1024, { "X-Signature": signBody(SECRET, EVENT) }, false);
      expectRefusedEarly(chunked, 64 * 1024 * 1024);
    } finally {
      server.kill();
    }
  });
});

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
