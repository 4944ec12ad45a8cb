import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { createWebhookSender, InputError, signBody, UsageError, USER_AGENT, verifyBody } from "../../../src/index.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { heldClock, numberedIds, virtualClock } from "../../helpers/virtual-clock.js";

// createWebhookSender: wh send's engine behind one call, against real servers on 127.0.0.1.

const startServer = closedAfterEach();
const STAMPS = { clock: virtualClock("2026-11-25T10:00:00.000Z"), newId: numberedIds("m") };
const fixture = (name: string): string => new URL(`../../../fixtures/tls/${name}`, import.meta.url).pathname;

describe("createWebhookSender", () => {
  it("validates, shapes and signs a Segment message as wh send does, and reports the attempt", async () => {
    const server = await startServer();
    const sender = await createWebhookSender({ webhooks: server.url, sharedSecret: "s3cret", ...STAMPS });
    try {
      const report = await sender.send({ type: "track", userId: "u1", event: "Order Completed", properties: { total: 5 } });

      expect(report).toMatchObject({ outcome: "delivered", deliveredTo: server.url, attempts: 1, messageId: "m-1" });
      expect(report.history).toEqual([
        { url: server.url, attempt: 1, outcome: expect.objectContaining({ kind: "response", status: 200 }), durationMs: expect.any(Number) },
      ]);
      const [request] = server.requests;
      expect(request?.body.toString()).toBe(report.body);
      expect(JSON.parse(report.body)).toMatchObject({
        version: 1,
        type: "track",
        userId: "u1",
        event: "Order Completed",
        messageId: "m-1",
        timestamp: "2026-11-25T10:00:00.000Z",
      });
      expect(request?.headers["x-signature"]).toBe(signBody("s3cret", report.body));
      expect(request?.headers["user-agent"]).toBe(USER_AGENT);
    } finally {
      await sender.close();
    }
  });

  it("retries by Segment's rules and lists every attempt with the wait after it", async () => {
    const server = await startServer({ replies: [503, { status: 429, headers: { "Retry-After": "7" } }, 200] });
    const clock = virtualClock("2026-11-25T10:00:00.000Z");
    const sender = await createWebhookSender({ webhooks: [server.url], clock });
    try {
      const report = await sender.send('{"raw":true}');

      expect(report.outcome).toBe("delivered");
      expect(
        report.history.map(({ attempt, outcome, retryInMs }) => ({ attempt, status: outcome.kind === "response" ? outcome.status : 0, retryInMs })),
      ).toEqual([
        { attempt: 1, status: 503, retryInMs: clock.slept[0] },
        { attempt: 2, status: 429, retryInMs: 7_000 },
        { attempt: 3, status: 200, retryInMs: undefined },
      ]);
      expect(server.requests.map((request) => request.body.toString())).toEqual(['{"raw":true}', '{"raw":true}', '{"raw":true}']);
      expect(server.requests[0]?.headers["x-signature"]).toBeUndefined();
    } finally {
      await sender.close();
    }
  });

  it("gives up on a final status, and when the retry window closes", async () => {
    const server = await startServer({ replies: (request) => (request.path.endsWith("gone") ? 400 : 500) });
    const sender = await createWebhookSender({ webhooks: `${server.url}/gone`, ...STAMPS });
    const windowed = await createWebhookSender({ webhooks: server.url, retryWindowMs: 10_000, clock: virtualClock("2026-11-25T10:00:00.000Z") });
    try {
      expect(await sender.send("{}")).toMatchObject({ outcome: "failed", attempts: 1 });
      const report = await windowed.send("{}");
      expect(report.outcome).toBe("failed");
      expect(report.targets[0]?.reason).toBe("retry window closed");
    } finally {
      await Promise.all([sender.close(), windowed.close()]);
    }
  });

  it("sends an Actions batch signed over its first event, with PUT, and bytes as they are", async () => {
    const server = await startServer();
    const sender = await createWebhookSender({ webhooks: { url: server.url, headers: { "X-Team": "a" } }, sharedSecret: "s", mode: "actions", method: "PUT" });
    try {
      const batch = Buffer.from('[{"type":"track","event":"A"}, {"type":"track","event":"B"}]');
      const report = await sender.send(batch);

      const [request] = server.requests;
      expect(report.outcome).toBe("delivered");
      expect(request?.method).toBe("PUT");
      expect(request?.headers["x-team"]).toBe("a");
      expect(request?.body.equals(batch)).toBe(true);
      expect(verifyBody("s", request?.body ?? "", String(request?.headers["x-signature"]))).toEqual({ ok: true, kind: "batch" });
    } finally {
      await sender.close();
    }
  });

  it("trusts a --ca file's certificates, and reads proxies from the env it is given", async () => {
    const tls = { key: readFileSync(fixture("server.key")), cert: readFileSync(fixture("server.crt")) };
    const server = await startServer({ tls });
    const untrusted = await createWebhookSender({ webhooks: server.url });
    const trusted = await createWebhookSender({ webhooks: server.url, ca: [fixture("ca.crt")] });
    // A proxy that records each CONNECT and refuses it: the sender went to it, as the env said.
    const tunnels: string[] = [];
    const proxy = createServer().on("connect", (request: IncomingMessage, socket: Socket) => {
      tunnels.push(request.url ?? "");
      socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const proxied = await createWebhookSender({ webhooks: "http://wh-test.invalid/hook", maxAttempts: 1, env: { HTTP_PROXY: proxyUrl } });
    try {
      expect((await untrusted.send("{}")).history[0]?.outcome).toMatchObject({ kind: "error", code: "tls" });
      expect(await trusted.send("{}")).toMatchObject({ outcome: "delivered" });
      expect(await proxied.send("{}")).toMatchObject({ outcome: "failed", attempts: 1 });
      expect(tunnels).toEqual(["wh-test.invalid:80"]);
    } finally {
      await Promise.all([untrusted.close(), trusted.close(), proxied.close(), new Promise((resolve) => proxy.close(resolve))]);
    }
  });

  it("skips a message whose integrations turn the destination off, sending nothing", async () => {
    const server = await startServer();
    const sender = await createWebhookSender({ webhooks: server.url, ...STAMPS });
    try {
      const report = await sender.send({ type: "track", userId: "u1", event: "E", integrations: { Webhooks: false } });
      expect(report).toMatchObject({ outcome: "skipped", attempts: 0, skipReason: "its integrations turn the Webhooks destination off" });
      expect(server.requests).toEqual([]);
    } finally {
      await sender.close();
    }
  });

  it("stops a send waiting to retry when its signal aborts, or when the sender closes", async () => {
    const server = await startServer({ replies: [503] });
    const sender = await createWebhookSender({ webhooks: server.url });
    const controller = new AbortController();
    const aborted = sender.send("{}", { onEvent: (event) => event.type === "retry" && controller.abort(), signal: controller.signal });
    expect(await aborted).toMatchObject({ outcome: "aborted", attempts: 1 });
    const closed = sender.send("{}", { onEvent: (event) => event.type === "retry" && void sender.close() });
    expect(await closed).toMatchObject({ outcome: "aborted" });
  });

  it.each([
    ["without a signal", undefined],
    ["all given one signal", new AbortController().signal],
  ])("prints no MaxListenersExceededWarning while 50 sends wait to retry, %s", async (_, signal) => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on("warning", onWarning);
    const server = await startServer({ replies: [503] });
    const clock = heldClock("2026-11-25T10:00:00.000Z");
    const sender = await createWebhookSender({ webhooks: server.url, clock });
    try {
      const sends = Array.from({ length: 50 }, () => sender.send("{}", { signal }));
      await clock.whenPending(50);
      await sender.close();
      expect((await Promise.all(sends)).map((report) => report.outcome)).toEqual(Array(50).fill("aborted"));
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("refuses bad settings and bad messages with errors that name them", async () => {
    await expect(createWebhookSender({ webhooks: "ftp://x" })).rejects.toThrow(UsageError);
    await expect(createWebhookSender({ webhooks: "ftp://x" })).rejects.toThrow(/webhooks\[0\]\.url: "ftp:\/\/x\/" is not an http or https URL/);
    await expect(createWebhookSender({ webhooks: [] })).rejects.toThrow(/webhooks: at least one webhook URL is required/);
    await expect(createWebhookSender({ webhooks: "http://x", method: "PUT" })).rejects.toThrow(
      new UsageError("method PUT needs mode actions (the classic destination only POSTs)"),
    );
    await expect(createWebhookSender({ webhooks: "http://x", timeoutMs: 0 })).rejects.toThrow(
      /timeoutMs: must be a number of at least 1 and at most 2147483647 \(Node's longest timer\) \(got 0\)/,
    );
    await expect(createWebhookSender({ webhooks: "http://x", maxAttempts: Number.NaN })).rejects.toThrow(
      /maxAttempts: must be a whole number of at least 1 \(got NaN\)/,
    );
    await expect(createWebhookSender({ webhooks: "http://x", sharedSecret: "" })).rejects.toThrow(/sharedSecret: must not be empty/);
    await expect(createWebhookSender({ webhooks: "http://x", ca: ["/nonexistent.pem"] })).rejects.toThrow(/--ca \/nonexistent.pem/);

    const server = await startServer();
    const sender = await createWebhookSender({ webhooks: server.url });
    try {
      await expect(sender.send({ type: "track", event: "E" })).rejects.toThrow(InputError);
      await expect(sender.send({ type: "track", event: "E" })).rejects.toThrow(/invalid message: .*userId/);
      await expect(sender.send(new Uint8Array([0xff, 0xfe]))).rejects.toThrow("the body is not valid UTF-8 (wh does not guess an encoding)");
      expect(server.requests).toEqual([]);
    } finally {
      await sender.close();
    }
  });

  it("applies destination filters: a dropped message is skipped as filtered and never sent, a cut one is sent cut", async () => {
    const server = await startServer();
    const filters = [
      { title: "No heartbeats", if: "event = 'Heartbeat'", actions: [{ type: "DROP" }] },
      { if: "all", actions: [{ type: "DROP_PROPERTIES", fields: { properties: ["email"] } }] },
    ];
    const sender = await createWebhookSender({ webhooks: server.url, filters, ...STAMPS });
    try {
      const dropped = await sender.send({ type: "track", userId: "u1", event: "Heartbeat" });
      expect(dropped).toMatchObject({
        outcome: "skipped",
        skipKind: "filtered",
        skipReason: 'the filter "No heartbeats" dropped it',
        attempts: 0,
        history: [],
        deliveredTo: undefined,
      });
      expect(server.requests).toEqual([]);

      const cut = await sender.send({ type: "track", userId: "u1", event: "Signed Up", properties: { plan: "pro", email: "u1@example.com" } });
      expect(cut.outcome).toBe("delivered");
      expect(server.requests.map((request) => JSON.parse(request.body.toString()).properties)).toEqual([{ plan: "pro" }]);
    } finally {
      await sender.close();
    }
  });

  it("refuses bad filters when it is created with a UsageError, naming each by its place", async () => {
    const bad = (filters: unknown) => createWebhookSender({ webhooks: "http://127.0.0.1:9/", filters: filters as never });
    await expect(bad([{ if: "event = ", actions: [{ type: "DROP" }] }])).rejects.toThrow(UsageError);
    await expect(bad([{ if: "event = ", actions: [{ type: "DROP" }] }])).rejects.toThrow(/filters\[0\]\.if: not FQL that wh can run: an operand is missing/);
    await expect(
      bad([
        { if: "all", actions: [{ type: "DROP" }] },
        { if: "all", actions: [{ type: "DELETE" }] },
      ]),
    ).rejects.toThrow(/filters\[1\]\.actions\[0\]\.type: "DELETE" is not a filter action/);
    await expect(bad([{ if: "all", actions: [] }])).rejects.toThrow(/filters\[0\]\.actions: a filter needs at least one action/);
    await expect(bad({ if: "all" })).rejects.toThrow(new UsageError("filters: Invalid input: expected array, received object"));
  });
});
