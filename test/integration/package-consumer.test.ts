import { execFile, execFileSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPacked, type PackedPackage } from "./packed-package.js";

// The library entry imports, requires and type-checks from consumer projects built against the
// packed package. Needs `npm run build` first.

const execFileAsync = promisify(execFile);
let packed: PackedPackage;

beforeAll(async () => {
  packed = await installPacked();
});
afterAll(async () => {
  await packed?.remove();
});

/** One consumer's code, the same text for an ES module and a CommonJS project. */
const CONSUMER = `import { Analytics, prepareMessage, signBody, UsageError, verifyBody, WhError, type DeliveryReport, type PrepareResult } from "wh";
const prepared: PrepareResult = prepareMessage({ type: "track", userId: "u1", event: "E" }, { now: () => new Date(0), newId: () => "id-1" }, { mode: "actions" });
if (!prepared.ok) throw new Error(prepared.error);
const signature: string = signBody("s3cret", prepared.message.body);
const verdict = verifyBody("s3cret", prepared.message.body, signature);
const client = new Analytics({ writeKey: "wk", endpoint: "http://127.0.0.1:9" });
const report: DeliveryReport | undefined = undefined;
const error: unknown = new UsageError("x");
void client.close({ timeoutMs: 10 }).then(({ unsent }) => console.log(JSON.stringify({ ok: verdict.ok, unsent: unsent.length, report: report ?? null, isError: error instanceof WhError })));
`;
const EXPECTED = { ok: true, unsent: 0, report: null, isError: true };

describe("the packed package", () => {
  it("type-checks and runs an ES module consumer, with the ES module's types", async () => {
    const project = await packed.project("esm", { type: "module", files: { "consumer.ts": CONSUMER } });
    const read = project.compile();

    expect(read).toContain(join(packed.installed, "dist", "index.d.ts"));
    expect(JSON.parse(await project.run("consumer.js"))).toEqual(EXPECTED);
  });

  it.each(["NodeNext", "Node16"] as const)(
    "type-checks (module %s) and runs a CommonJS consumer, which requires dist/index.cjs with CommonJS types",
    async (module) => {
      const project = await packed.project(`cjs-${module}`, { type: "commonjs", module, files: { "consumer.ts": CONSUMER } });
      const read = project.compile();

      expect(read).toContain(join(packed.installed, "dist", "index.d.cts"));
      expect(read.filter((file) => file.startsWith(packed.installed) && file.endsWith(".d.ts"))).toEqual([]);
      expect(await readFile(join(project.dir, "out", "consumer.js"), "utf8")).toContain('require("wh")');
      expect(JSON.parse(await project.run("consumer.js"))).toEqual(EXPECTED);
    },
  );

  it("sends a signed message with createWebhookSender, from the typed report of every attempt", async () => {
    const sender = `import { createServer } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { createWebhookSender, verifyBody, type SendReport } from "wh";
let answers = 0;
const bodies: { body: string; signature: string }[] = [];
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk)).on("end", () => {
    bodies.push({ body: Buffer.concat(chunks).toString(), signature: String(request.headers["x-signature"]) });
    response.writeHead((answers += 1) === 1 ? 503 : 200).end();
  });
}).listen(0, "127.0.0.1");
await once(server, "listening");
const webhook = await createWebhookSender({ webhooks: \`http://127.0.0.1:\${(server.address() as AddressInfo).port}/hook\`, sharedSecret: "s3cret" });
const report: SendReport = await webhook.send({ type: "identify", userId: "u1", traits: { plan: "pro" } });
await webhook.close();
server.close();
const statuses = report.history.map((entry) => (entry.outcome.kind === "response" ? entry.outcome.status : entry.outcome.code));
console.log(JSON.stringify({ outcome: report.outcome, statuses, verified: bodies.map(({ body, signature }) => verifyBody("s3cret", body, signature).ok) }));
`;
    const project = await packed.project("sender", { type: "module", files: { "sender.ts": sender } });
    project.compile();

    expect(JSON.parse(await project.run("sender.js"))).toEqual({ outcome: "delivered", statuses: [503, 200], verified: [true, true] });
  });

  it("delivers to subscriptions from require() and from import(): Segment's engines load beside the installed package", async () => {
    const received: string[] = [];
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request
        .on("data", (chunk: Buffer) => chunks.push(chunk))
        .on("end", () => {
          received.push(Buffer.concat(chunks).toString());
          response.end();
        });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a`;
    const subscription = { name: "A", actionSlug: "send", enabled: true, trigger: 'type = "track"', settings: { url, data: { cool: { "@path": "$.event" } } } };
    const send = (load: string) =>
      `${load}.then(async ({ createWebhookSender }) => { const sender = await createWebhookSender({ subscriptions: [${JSON.stringify(subscription)}] }); const report = await sender.send({ type: "track", userId: "u1", event: "E" }); await sender.close(); console.log(report.outcome); })`;
    const run = async (code: string, type: string) =>
      (await execFileAsync(process.execPath, [`--input-type=${type}`, "-e", code], { cwd: packed.dir, encoding: "utf8" })).stdout.trim();
    try {
      expect(await run(send('Promise.resolve(require("wh"))'), "commonjs")).toBe("delivered");
      expect(await run(send('import("wh")'), "module")).toBe("delivered");
    } finally {
      server.close();
    }
    expect(received).toEqual(['{"cool":"E"}', '{"cool":"E"}']);
  });

  it("answers a plain require() and import() with the same names", async () => {
    const names = (code: string, type: string) => execFileSync(process.execPath, [`--input-type=${type}`, "-e", code], { cwd: packed.dir, encoding: "utf8" });
    const required = names('console.log(Object.keys(require("wh")).sort().join())', "commonjs");
    const imported = names('console.log(Object.keys(await import("wh")).sort().join())', "module");

    expect(required).toBe(imported);
    expect(required).toContain("verifySignature");
  });

  it("leaves the zod configuration of an application that imports it as that application set it", async () => {
    const host = `import * as z from "zod/mini";
import { de } from "zod/locales";
z.config(de());
const wh = await import("wh");
const config = wh.parseConfig({ webhooks: "x" });
console.log(JSON.stringify({ host: z.string().safeParse(5).error?.issues[0]?.message, wh: config.ok ? null : config.issues }));
`;
    const project = await packed.project("zod-host", { type: "module", files: { "host.ts": host } });
    project.compile();

    expect(JSON.parse(await project.run("host.js"))).toEqual({
      host: "Ungültige Eingabe: erwartet string, erhalten Zahl",
      wh: ["webhooks: Invalid input: expected array, received string"],
    });
  });

  it("runs its bundled CLI where it is installed, with only wh's own dependencies beside it", async () => {
    // It finds and reads a YAML config (its config loader is a file of the bundle).
    await writeFile(join(packed.dir, ".whrc.yaml"), "webhooks:\n  - url: https://installed.example.com/wh\n");
    const shown = JSON.parse(
      execFileSync(process.execPath, [join(packed.installed, "bin", "wh.cjs"), "--json", "config", "show"], { cwd: packed.dir, encoding: "utf8" }),
    ) as { configFile: string; destinations: { webhooks: { url: string }[] }[] };

    expect(shown.configFile).toBe(join(packed.dir, ".whrc.yaml"));
    expect(shown.destinations[0]?.webhooks[0]?.url).toBe("https://installed.example.com/wh");
    expect(packed.files).toEqual(expect.arrayContaining(["dist/index.d.ts", "dist/index.cjs", "dist/index.d.cts", "dist/cli-bundle/main.cjs", "bin/wh.cjs"]));
  });
});
