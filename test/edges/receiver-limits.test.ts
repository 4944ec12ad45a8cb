import { once } from "node:events";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeWebhook, signBody, verifyFetchRequest } from "../../src/index.js";

// The receivers' body limit at its edge, counted in bytes: a body of exactly maxBytes is taken,
// one byte more is refused (413), whether the body is chunked or its length declared; a declared
// length over the limit is refused before the body is sent. The bodies are mostly two-byte
// characters, so a limit counted in characters would take twice the bytes.

const SECRET = "whsec-edges";
const LIMIT = 1_000;

/** A signed JSON body of exactly `bytes` bytes, padded with "é" (two bytes in UTF-8) and one "x" when odd. */
function bodyOf(bytes: number): Buffer {
  const base = '{"type":"track","pad":""}';
  const room = bytes - base.length;
  const text = `{"type":"track","pad":"${"é".repeat(Math.floor(room / 2))}${"x".repeat(room % 2)}"}`;
  const body = Buffer.from(text);
  expect(body.byteLength).toBe(bytes);
  return body;
}

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer(
    nodeWebhook({ secret: SECRET, maxBytes: LIMIT }, (webhook, _request, response) => {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ raw: webhook.raw.byteLength }));
    }),
  ).listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/**
 * POSTs the body signed, chunked (in three writes, cut inside a character) or with its length
 * declared; `send: false` sends the headers alone. The status, or "no answer" after `waitMs`.
 */
function post(body: Buffer, framing: "chunked" | "declared", send = true, waitMs = 5_000): Promise<number | "no answer"> {
  const length = framing === "declared" ? { "content-length": String(body.byteLength) } : { "transfer-encoding": "chunked" };
  const client = httpRequest(url, {
    method: "POST",
    agent: false,
    headers: { "content-type": "application/json", "x-signature": signBody(SECRET, body), ...length },
  });
  client.on("error", () => undefined);
  const answered = new Promise<number | "no answer">((resolve) => {
    const timer = setTimeout(() => resolve("no answer"), waitMs);
    client.on("response", (response) => {
      clearTimeout(timer);
      response.resume();
      resolve(response.statusCode as number);
    });
  });
  if (!send) client.flushHeaders();
  else {
    for (const at of [0, 1, 2])
      client.write(body.subarray(Math.floor((at * body.length) / 3) + (at > 0 ? 1 : 0), Math.floor(((at + 1) * body.length) / 3) + 1));
    client.end();
  }
  return answered.finally(() => client.destroy());
}

describe("nodeWebhook's body limit, in bytes", () => {
  it("takes a body of exactly maxBytes, chunked or declared", async () => {
    expect(await post(bodyOf(LIMIT), "chunked")).toBe(200);
    expect(await post(bodyOf(LIMIT), "declared")).toBe(200);
  });

  it("refuses a body of maxBytes + 1 with 413, chunked or declared", async () => {
    expect(await post(bodyOf(LIMIT + 1), "chunked")).toBe(413);
    expect(await post(bodyOf(LIMIT + 1), "declared")).toBe(413);
  });

  it("refuses a declared length of maxBytes + 1 at once, before the body is sent", async () => {
    expect(await post(bodyOf(LIMIT + 1), "declared", false, 2_000)).toBe(413);
  });
});

/** A fetch Request whose body is `body` in one chunk, pulled only when read; `pulled` says whether it was. */
function fetchRequest(body: Buffer, declared: boolean): { request: Request; pulled: () => boolean } {
  let pulled = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulled = true;
        controller.enqueue(new Uint8Array(body));
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  const headers = { "x-signature": signBody(SECRET, body), ...(declared ? { "content-length": String(body.byteLength) } : {}) };
  const request = new Request(url, { method: "POST", body: stream, headers, duplex: "half" } as RequestInit);
  return { request, pulled: () => pulled };
}

describe("verifyFetchRequest's body limit, in bytes", () => {
  it("takes a body of exactly maxBytes and refuses one byte more, streamed or declared", async () => {
    for (const declared of [false, true]) {
      const taken = await verifyFetchRequest(fetchRequest(bodyOf(LIMIT), declared).request, { secret: SECRET, maxBytes: LIMIT });
      expect(taken.ok && taken.webhook.raw.byteLength).toBe(LIMIT);
      const over = fetchRequest(bodyOf(LIMIT + 1), declared);
      expect(await verifyFetchRequest(over.request, { secret: SECRET, maxBytes: LIMIT })).toMatchObject({ ok: false, status: 413, reason: "too-large" });
      // A declared length over the limit is refused unread.
      expect(over.pulled()).toBe(!declared);
    }
  });
});
