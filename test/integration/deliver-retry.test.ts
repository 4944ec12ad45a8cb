import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { AttemptOutcome } from "../../src/core/retry-policy.js";
import { createUndiciTransport } from "../../src/adapters/undici-transport.js";
import { startSilentServer, type Reply } from "../helpers/recording-server.js";
import { FAST_POLICY, createHarness, deliver, safetyNet, targetOf, wait } from "./support.js";

const BODY = '{"version":1,"type":"track","userId":"u1","event":"Retried","properties":{},"timestamp":"2026-11-21T09:30:08.276Z"}';

interface RetryCase {
  id: string;
  name: string;
  replies: Reply[];
  outcome: "delivered" | "failed";
  /** Requests the server records: exactly the attempts the report counts. */
  requests: number;
  last: AttemptOutcome | { kind: "response"; status: number };
  maxAttempts?: number;
}

/** One URL, a scripted server, the real clock and a fast policy: what the delivery comes to. */
const CASES: RetryCase[] = [
  {
    id: "T01",
    name: "retries 503, 503 and is delivered on the third attempt",
    replies: [503, 503, 200],
    outcome: "delivered",
    requests: 3,
    last: { kind: "response", status: 200 },
  },
  { id: "T02", name: "retries 500, 502 and 504", replies: [500, 502, 504, 200], outcome: "delivered", requests: 4, last: { kind: "response", status: 200 } },
  { id: "T03", name: "retries 408", replies: [408, 200], outcome: "delivered", requests: 2, last: { kind: "response", status: 200 } },
  {
    id: "T04",
    name: "retries 429 without Retry-After on the backoff schedule",
    replies: [429, 429, 200],
    outcome: "delivered",
    requests: 3,
    last: { kind: "response", status: 200 },
  },
  { id: "T05", name: "retries a reset connection", replies: ["reset", 200], outcome: "delivered", requests: 2, last: { kind: "response", status: 200 } },
  { id: "T06", name: "takes any 2xx as success", replies: [204], outcome: "delivered", requests: 1, last: { kind: "response", status: 204 } },
  { id: "T07", name: "treats 404 as final after one request", replies: [404, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 404 } },
  { id: "T08", name: "treats 400 as final", replies: [400, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 400 } },
  { id: "T09", name: "treats 401 as final", replies: [401, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 401 } },
  { id: "T10", name: "treats 422 as final", replies: [422, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 422 } },
  { id: "T11", name: "treats 501 as final", replies: [501, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 501 } },
  { id: "T12", name: "treats 505 as final", replies: [505, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 505 } },
  {
    id: "T13b",
    name: "retries 410 and 460, as Segment's own libraries do",
    replies: [410, 460, 200],
    outcome: "delivered",
    requests: 3,
    last: { kind: "response", status: 200 },
  },
  { id: "T13", name: "treats 304 as final", replies: [304, 200], outcome: "failed", requests: 1, last: { kind: "response", status: 304 } },
  {
    id: "T14",
    name: "gives up after maxAttempts of 503",
    replies: [503],
    outcome: "failed",
    requests: 3,
    last: { kind: "response", status: 503 },
    maxAttempts: 3,
  },
  {
    id: "T15",
    name: "gives up at once when Retry-After points past the retry window",
    replies: [{ status: 503, headers: { "Retry-After": "3600" } }, 200],
    outcome: "failed",
    requests: 1,
    last: { kind: "response", status: 503 },
  },
];

describe("deliverMessage retries against a real server", () => {
  const harness = createHarness();
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all([harness.close(), ...servers.splice(0).map((server) => closeServer(server))]);
  });

  it.each(CASES.map((row) => [`${row.id} ${row.name}`, row] as const))("%s", async (_title, { replies, outcome, requests, last, maxAttempts }) => {
    const server = await harness.server({ replies });
    const policy = maxAttempts === undefined ? FAST_POLICY : { ...FAST_POLICY, maxAttempts };
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport(), policy });

    expect(report.outcome).toBe(outcome);
    expect(report.deliveredTo).toBe(outcome === "delivered" ? server.url : undefined);
    expect(report.attempts).toBe(requests);
    expect(report.targets).toHaveLength(1);
    expect(report.targets[0]).toMatchObject({ url: server.url, attempts: requests, result: outcome, last });
    expect(events.filter((event) => event.type === "failed")).toHaveLength(outcome === "failed" ? 1 : 0);
    // The count after the report says no request was left in flight or sent afterwards.
    expect(server.requests).toHaveLength(requests);
    for (const request of server.requests) expect(request.body.toString("utf8")).toBe(BODY);
  });

  it.each([301, 302, 307, 308])("T16 treats a %i with a Location as final and does not follow it", async (status) => {
    const elsewhere = await harness.server();
    const server = await harness.server({ replies: [{ status, headers: { Location: elsewhere.url } }, 200] });
    const { report } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport() });

    expect(report.outcome).toBe("failed");
    expect(report.targets[0]).toMatchObject({ attempts: 1, result: "failed", last: { kind: "response", status } });
    expect(server.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it.each<[string, Reply]>([
    ["a reply slower than the timeout", { status: 200, delayMs: 1_500 }],
    ["a server that never answers", "hang"],
  ])("T17 records %s as a timeout, retries, and is delivered when the next reply is fast", async (_name, slow) => {
    const server = await harness.server({ replies: [slow, 200] });
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport(), timeoutMs: 300, signal: safetyNet() });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: server.url, attempts: 2 });
    const first = events.find((event) => event.type === "response" && event.attempt === 1);
    expect(first).toMatchObject({ outcome: { kind: "error", code: "timeout" } });
    expect(events.some((event) => event.type === "retry" && event.attempt === 1)).toBe(true);
    expect(server.requests).toHaveLength(2);
  });

  it("T18 counts the whole response against the timeout: headers on time and a body that stalls is a timeout", async () => {
    let requests = 0;
    const server = createServer((request, response) => {
      requests += 1;
      request.resume();
      request.on("end", () => {
        response.writeHead(200, { "content-type": "application/json", "content-length": "11" });
        if (requests === 1)
          response.write('{"ok":'); // the rest never comes
        else response.end('{"ok":true}');
      });
    });
    servers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const { report, events } = await deliver(BODY, { targets: [targetOf(url)], transport: harness.transport(), timeoutMs: 300, signal: safetyNet() });

    expect(events.find((event) => event.type === "response" && event.attempt === 1)).toMatchObject({ outcome: { kind: "error", code: "timeout" } });
    expect(report).toMatchObject({ outcome: "delivered", attempts: 2 });
    expect(requests).toBe(2);
  });

  it("T18b counts a TLS handshake that never finishes against the timeout, and the transport then closes at once", async () => {
    // A TLS handshake to it never finishes: undici never reaches onConnect.
    const silent = await startSilentServer();
    const url = `https://127.0.0.1:${silent.port}/hook`;
    const transport = createUndiciTransport({ connectTimeoutMs: 300 });
    try {
      const started = Date.now();
      const { report, events } = await deliver(BODY, {
        targets: [targetOf(url)],
        transport,
        timeoutMs: 300,
        policy: { ...FAST_POLICY, maxAttempts: 1 },
        signal: safetyNet(),
      });
      expect(report).toMatchObject({ outcome: "failed", attempts: 1 });
      expect(events.find((event) => event.type === "response" && event.attempt === 1)).toMatchObject({ outcome: { kind: "error", code: "timeout" } });
      // undici's own connect timeout is 10 s: the attempt and the close end long before it.
      await transport.close();
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.close();
    }
  });

  it("T19 retries a refused connection until the window closes, then fails saying nothing is listening on its address", async () => {
    const port = await harness.closedPort();
    const url = `http://127.0.0.1:${port}/hook`;
    const { report, events } = await deliver(BODY, { targets: [targetOf(url)], transport: harness.transport(), policy: { ...FAST_POLICY, windowMs: 300 } });

    expect(report.outcome).toBe("failed");
    expect(report.attempts).toBeGreaterThan(1);
    const target = report.targets[0];
    expect(target).toMatchObject({ url, result: "failed", last: { kind: "error", code: "connection" } });
    expect(target?.reason).toMatch(/window/);
    expect(target?.last?.kind === "error" ? target.last.message : "").toBe(`nothing is listening on 127.0.0.1:${port} (connection refused)`);
    expect(events.filter((event) => event.type === "retry")).toHaveLength(report.attempts - 1);
    expect(events.filter((event) => event.type === "failed")).toHaveLength(1);
  });

  it("T20 stops retrying and reports aborted when the caller aborts", async () => {
    const controller = new AbortController();
    const server = await harness.server({
      replies: (_request, index) => {
        if (index === 2) controller.abort();
        return 503;
      },
    });
    const { report } = await deliver(BODY, {
      targets: [targetOf(server.url)],
      transport: harness.transport(),
      policy: { ...FAST_POLICY, windowMs: 60_000 },
      signal: controller.signal,
    });

    expect(report.outcome).toBe("aborted");
    expect(report.deliveredTo).toBeUndefined();
    expect(report.targets[0]?.result).toBe("cancelled");
    await wait(100);
    expect(server.requests).toHaveLength(3);
  });
});

function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}
