import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startInspector, type Inspector, type InspectorEntry, type ResendRequest } from "../../../src/adapters/inspector/server.js";

/**
 * The inspector's server spoken to with node:http, which sends whatever Host and Origin it is
 * given: what a page of another site whose name was rebound to 127.0.0.1 would send.
 */
const inspectors: Inspector[] = [];
afterEach(async () => {
  await Promise.all(inspectors.splice(0).map((inspector) => inspector.close()));
});

interface Started {
  inspector: Inspector;
  port: number;
  resends: { id: number; request: ResendRequest }[];
}

async function start(host = "127.0.0.1", retryNow?: () => number): Promise<Started> {
  const resends: Started["resends"] = [];
  const inspector = await startInspector({
    host,
    origin: "http://127.0.0.1:1/",
    retryNow,
    resend: async (id, request) => {
      resends.push({ id, request });
      return { text: "HTTP 200", outcome: "delivered" };
    },
  });
  inspectors.push(inspector);
  inspector.add(entry(1));
  return { inspector, port: Number(new URL(inspector.url).port), resends };
}

function entry(id: number): InspectorEntry {
  const body = '{"type":"track","userId":"u1","event":"Secret Order"}';
  return {
    id,
    kind: "request",
    receivedAt: new Date(0).toISOString(),
    method: "POST",
    path: "/hook",
    type: "track",
    event: "Secret Order",
    user: "u1",
    size: body.length,
    verdict: "valid",
    headers: {},
    body,
    status: 200,
    answer: "",
    resends: [],
  };
}

interface Answer {
  status: number;
  body: string;
}

/** One request to 127.0.0.1:port with the given Host (none if not given) and Origin; an event stream is read up to its second frame (hello, then the one entry). */
function ask(port: number, path: string, headers: Record<string, string>, method = "GET", body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path, method, headers, setHost: false }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
        if (response.headers["content-type"] === "text/event-stream" && text.split("\n\n").length > 2) {
          response.destroy();
          resolve({ status: response.statusCode ?? 0, body: text });
        }
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

const RESEND = "/api/entries/1/resend";
const resendHeaders = { "content-type": "application/json", "x-wh-inspector": "1" };

describe("the inspector refuses requests for other host names (DNS rebinding)", () => {
  it("answers the page, the event stream and resend for 127.0.0.1, localhost and [::1] with its port", async () => {
    const { port, resends } = await start();
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      expect((await ask(port, "/", { host })).status, host).toBe(200);
      expect((await ask(port, "/events", { host })).body, host).toContain("Secret Order");
    }
    const sameOrigin = await ask(port, RESEND, { host: `localhost:${port}`, origin: `http://localhost:${port}`, ...resendHeaders }, "POST", "{}");
    expect(sameOrigin.status).toBe(200);
    expect(resends).toHaveLength(1);
  });

  it("refuses /, /events and resend with 403 when Host names another site, and resends nothing", async () => {
    const { port, resends } = await start();
    for (const host of [`evil.example:${port}`, "evil.example", `127.0.0.1.evil.example:${port}`, `localhost.evil.example:${port}`]) {
      const page = await ask(port, "/", { host });
      expect(page.status, host).toBe(403);
      expect(page.body).not.toContain("<script");
      const events = await ask(port, "/events", { host });
      expect(events.status, host).toBe(403);
      expect(events.body).not.toContain("Secret Order");
      expect(
        (await ask(port, RESEND, { host, origin: `http://${host}`, ...resendHeaders }, "POST", '{"url":"http://evil.example/steal","resign":true}')).status,
        host,
      ).toBe(403);
    }
    expect(resends).toEqual([]);
  });

  it("refuses a Host with another port or without one, and a request with no Host", async () => {
    const { port } = await start();
    expect((await ask(port, "/", { host: `127.0.0.1:${port + 1}` })).status).toBe(403);
    expect((await ask(port, "/", { host: "127.0.0.1" })).status).toBe(403);
    // HTTP/1.1 requires Host: Node's server answers 400 before the inspector sees the request.
    expect((await ask(port, "/", {})).status).toBe(400);
  });

  it("refuses /, /events and resend with 403 when Origin is another site, and resends nothing", async () => {
    const { port, resends } = await start();
    const host = `127.0.0.1:${port}`;
    for (const origin of ["http://evil.example", `http://evil.example:${port}`, "null", `https://127.0.0.1:${port}`]) {
      expect((await ask(port, "/", { host, origin })).status, origin).toBe(403);
      const events = await ask(port, "/events", { host, origin });
      expect(events.status, origin).toBe(403);
      expect(events.body).not.toContain("Secret Order");
      expect((await ask(port, RESEND, { host, origin, ...resendHeaders }, "POST", '{"url":"http://evil.example/steal","resign":true}')).status, origin).toBe(
        403,
      );
    }
    expect(resends).toEqual([]);
  });

  it("bound to every address, takes any IP address or localhost with its port, the token still required", async () => {
    const { inspector, port } = await start("0.0.0.0");
    const token = new URL(inspector.url).search;
    for (const host of [`127.0.0.1:${port}`, `192.0.2.7:${port}`, `[2001:db8::7]:${port}`, `localhost:${port}`]) {
      expect((await ask(port, `/${token}`, { host })).status, host).toBe(200);
    }
    expect((await ask(port, "/", { host: `192.0.2.7:${port}` })).status).toBe(403);
    expect((await ask(port, `/${token}`, { host: `evil.example:${port}` })).status).toBe(403);
    expect((await ask(port, `/${token}`, { host: `192.0.2.7:${port + 1}` })).status).toBe(403);
  });
});

describe("the inspector's actions", () => {
  const own = (port: number) => ({ host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, ...resendHeaders });

  it("resends an edited body only re-signed, byte for byte as typed; the same body is no edit", async () => {
    const { port, resends } = await start();
    const edited = '{"type":"track", "userId":"u1","event":"Edited é"}\n';
    const refused = await ask(port, RESEND, own(port), "POST", JSON.stringify({ url: "", resign: false, body: edited }));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error).toBe(
      "an edited body cannot be sent as it came: its X-Signature is of the bytes received; re-sign it (resign: true)",
    );
    expect(resends).toEqual([]);
    expect((await ask(port, RESEND, own(port), "POST", JSON.stringify({ url: "", resign: true, body: edited }))).status).toBe(200);
    const unedited = entry(1).body;
    expect((await ask(port, RESEND, own(port), "POST", JSON.stringify({ url: "", resign: false, body: unedited }))).status).toBe(200);
    expect(resends.map(({ request }) => request)).toEqual([
      { url: undefined, resign: true, body: edited },
      { url: undefined, resign: false, body: undefined },
    ]);
  });

  it("answers a resend it cannot read with 400 naming the problem, and resends nothing", async () => {
    const { port, resends } = await start();
    const cases: [string, string][] = [
      ["{", "the request's body is not JSON"],
      ['{"body":42,"resign":true}', "body: expected the text to send"],
      ['{"url":["http://x"],"resign":true}', "url: expected a URL or an empty string"],
    ];
    for (const [body, error] of cases) {
      const answer = await ask(port, RESEND, own(port), "POST", body);
      expect(answer.status, body).toBe(400);
      expect(JSON.parse(answer.body).error, body).toContain(error);
    }
    expect(resends).toEqual([]);
  });

  it("clears its entries (the next stream has none, a resend of one is 404), from its page only", async () => {
    const { inspector, port, resends } = await start();
    inspector.add(entry(2));
    expect((await ask(port, "/api/clear", { host: `127.0.0.1:${port}`, "content-type": "application/json" }, "POST", "{}")).status).toBe(403);
    expect((await ask(port, "/api/clear", { ...own(port), origin: "http://evil.example" }, "POST", "{}")).status).toBe(403);
    expect((await ask(port, "/events", { host: `127.0.0.1:${port}` })).body).toContain("Secret Order");
    const cleared = await ask(port, "/api/clear", own(port), "POST", "{}");
    expect(cleared).toEqual({ status: 200, body: '{"cleared":2}' });
    expect((await ask(port, RESEND, own(port), "POST", "{}")).status).toBe(404);
    expect(resends).toEqual([]);
    inspector.add(entry(3));
    const stream = await ask(port, "/events", { host: `127.0.0.1:${port}` });
    expect(stream.body).toContain('"id":3');
    expect(stream.body).not.toContain('"id":1,');
  });

  it("retries now through the function it was given, says how many, and tells the page it can", async () => {
    let calls = 0;
    const { port } = await start("127.0.0.1", () => {
      calls += 1;
      return 3;
    });
    expect((await ask(port, "/events", { host: `127.0.0.1:${port}` })).body).toContain('"retryNow":true');
    expect((await ask(port, "/api/retry-now", { host: `127.0.0.1:${port}` }, "POST", "{}")).status).toBe(403);
    expect(
      (await ask(port, "/api/retry-now", { host: `evil.example:${port}`, origin: `http://evil.example:${port}`, ...resendHeaders }, "POST", "{}")).status,
    ).toBe(403);
    expect(calls).toBe(0);
    expect(await ask(port, "/api/retry-now", own(port), "POST", "{}")).toEqual({ status: 200, body: '{"retried":3}' });
    expect(calls).toBe(1);
  });

  it("without a retry function, says so in hello and answers retry-now 404", async () => {
    const { port } = await start();
    expect((await ask(port, "/events", { host: `127.0.0.1:${port}` })).body).toContain('"retryNow":false');
    const answer = await ask(port, "/api/retry-now", own(port), "POST", "{}");
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body).error).toBe("no such action");
  });
});

describe("a page that stops reading", () => {
  it("is sent, once it reads again, how many requests it missed and the newest kept, not everything added meanwhile", async () => {
    const { inspector, port } = await start();
    // A page whose tab sleeps: it opens the stream and reads nothing until every request has come.
    const socket = connect(port, "127.0.0.1");
    socket.pause();
    socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await once(socket, "connect");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const ADDED = 20_000;
    const padding = "x".repeat(2_000);
    for (let id = 2; id <= ADDED + 1; id += 1) inspector.add({ ...entry(id), body: `{"padding":"${padding}"}` });
    // 40 MB was added: a stream that buffered it all would hand it all over.
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.resume();
    await new Promise<void>((resolve) => {
      const check = (): void => (text.includes(`"id":${ADDED + 1},`) ? resolve() : void setTimeout(check, 20));
      check();
    });
    socket.destroy();
    const frames = text.split("\n\n");
    const ids = frames.flatMap((frame) => /^event: entry\ndata: \{"id":(\d+),/m.exec(frame)?.[1] ?? []).map(Number);
    const missed = frames.flatMap((frame) => /^event: missed\ndata: (.*)$/m.exec(frame)?.[1] ?? []).map((data) => JSON.parse(data).missed as number);
    expect(missed).toHaveLength(1);
    expect(ids.length).toBeLessThan(ADDED / 2);
    // Every request was either shown or counted as missed, the newest shown last.
    expect(new Set(ids).size + (missed[0] as number)).toBe(ADDED + 1);
    expect(ids.at(-1)).toBe(ADDED + 1);
    expect(text.length).toBeLessThan((ADDED * padding.length) / 2);
  });
});
