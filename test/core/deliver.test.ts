import { describe, expect, it } from "vitest";
import { deliverMessage, describeOutcome, type DeliveryEvent, type DeliveryOptions, type WebhookTarget } from "../../src/core/deliver.js";
import { buildRequestHeaders } from "../../src/core/request-headers.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../../src/core/retry-policy.js";
import { signBody } from "../../src/core/sign.js";
import { verifyStandard } from "../../src/core/standard-webhooks.js";
import { FakeClock, FakeTransport, hangUntilAborted, ok200, START_MS, status, untilAborted, type ScriptStep } from "./fakes.js";

const A = "https://a.example.com/hook";
const B = "https://b.example.com/hook";
const BODY =
  '{"version":1,"type":"track","userId":"u1","event":"Order Completed","properties":{"total":99.5},"messageId":"m-1","timestamp":"2026-11-21T09:30:08.276Z"}';
const BODY_SIGNATURE = "cd6914bf41497c6f7998f4bff3a8b807330073b4"; // fixtures/signatures.json, secret "s3cret"

const target = (url: string, headers: Record<string, string> = {}): WebhookTarget => ({ url: new URL(url), headers });

interface Setup {
  clock: FakeClock;
  transport: FakeTransport;
  events: DeliveryEvent[];
  options: DeliveryOptions;
}

function setup(scripts: Record<string, ScriptStep[]>, over: Partial<DeliveryOptions> = {}, latencyMs = 0): Setup {
  const clock = new FakeClock();
  const transport = new FakeTransport(scripts, clock, latencyMs);
  const events: DeliveryEvent[] = [];
  const options: DeliveryOptions = {
    targets: Object.keys(scripts).map((url) => target(url)),
    transport,
    clock,
    policy: DEFAULT_RETRY_POLICY,
    timeoutMs: 5_000,
    userAgent: "wh/0.1.0",
    random: () => 0.5,
    onEvent: (event) => events.push(event),
    ...over,
  };
  return { clock, transport, events, options };
}

describe("deliverMessage", () => {
  it("retries two 503s and delivers on the third attempt", async () => {
    const { clock, transport, options } = setup({ [A]: [status(503), status(503), ok200] });
    const report = await deliverMessage(BODY, options);
    expect(report).toEqual({
      outcome: "delivered",
      deliveredTo: A,
      attempts: 3,
      durationMs: 1_500,
      targets: [{ url: A, attempts: 3, last: { kind: "response", status: 200 }, result: "delivered" }],
    });
    expect(clock.sleeps).toEqual([500, 1_000]);
    expect(transport.calls).toHaveLength(3);
  });

  it("emits attempt, response, retry … delivered in order", async () => {
    const { events, options } = setup({ [A]: [status(503), status(502), ok200] }, {}, 40);
    await deliverMessage(BODY, options);
    expect(events).toEqual([
      { type: "attempt", url: A, attempt: 1 },
      { type: "response", url: A, attempt: 1, outcome: { kind: "response", status: 503 }, durationMs: 40 },
      { type: "retry", url: A, attempt: 1, delayMs: 500, outcome: { kind: "response", status: 503 }, giveUpAtMs: START_MS + DEFAULT_RETRY_POLICY.windowMs },
      { type: "attempt", url: A, attempt: 2 },
      { type: "response", url: A, attempt: 2, outcome: { kind: "response", status: 502 }, durationMs: 40 },
      { type: "retry", url: A, attempt: 2, delayMs: 1_000, outcome: { kind: "response", status: 502 }, giveUpAtMs: START_MS + DEFAULT_RETRY_POLICY.windowMs },
      { type: "attempt", url: A, attempt: 3 },
      { type: "response", url: A, attempt: 3, outcome: { kind: "response", status: 200 }, durationMs: 40 },
      { type: "delivered", url: A, attempt: 3 },
    ]);
  });

  it("gives up on a 404 after one attempt", async () => {
    const { clock, events, options } = setup({ [A]: [status(404)] });
    const report = await deliverMessage(BODY, options);
    expect(report).toEqual({
      outcome: "failed",
      deliveredTo: undefined,
      attempts: 1,
      durationMs: 0,
      targets: [{ url: A, attempts: 1, last: { kind: "response", status: 404 }, result: "failed" }],
    });
    expect(clock.sleeps).toEqual([]);
    expect(events.map((event) => event.type)).toEqual(["attempt", "response", "failed"]);
    expect(events.at(-1)).toEqual({ type: "failed", report });
  });

  it("retries a 429 and honours Retry-After: 7 with a 7000 ms sleep", async () => {
    const { clock, options } = setup({ [A]: [status(429, "7"), ok200] });
    const report = await deliverMessage(BODY, options);
    expect(clock.sleeps).toEqual([7_000]);
    expect(report.outcome).toBe("delivered");
    expect(report.durationMs).toBe(7_000);
  });

  it("retries a timeout and a connection error", async () => {
    const { clock, options } = setup({
      [A]: [{ kind: "error", code: "timeout", message: "timeout after 5s" }, { kind: "error", code: "connection", message: "ECONNREFUSED" }, ok200],
    });
    const report = await deliverMessage(BODY, options);
    expect(report.outcome).toBe("delivered");
    expect(report.attempts).toBe(3);
    expect(clock.sleeps).toEqual([500, 1_000]);
  });

  it("does not retry a TLS error", async () => {
    const tls = { kind: "error", code: "tls", message: "self-signed certificate" } as const;
    const { options } = setup({ [A]: [tls] });
    const report = await deliverMessage(BODY, options);
    expect(report.targets).toEqual([{ url: A, attempts: 1, last: tls, result: "failed" }]);
  });

  it("gives up early, saying so, when Retry-After asks to wait past the end of the window", async () => {
    const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, windowMs: 10_000 };
    const { clock, events, options } = setup({ [A]: [status(503, "6"), status(503, "6")] }, { policy });
    const report = await deliverMessage(BODY, options);
    expect(clock.sleeps).toEqual([6_000]);
    expect(report).toEqual({
      outcome: "failed",
      deliveredTo: undefined,
      attempts: 2,
      durationMs: 6_000,
      targets: [
        {
          url: A,
          attempts: 2,
          last: { kind: "response", status: 503, retryAfter: "6" },
          result: "failed",
          reason: "Retry-After asks to wait 6.0s, past the end of the retry window",
        },
      ],
    });
    expect(events.at(-1)).toEqual({ type: "failed", report });
  });

  it("gives up after maxAttempts", async () => {
    const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 3 };
    const { clock, options } = setup({ [A]: [status(500), status(500), status(500)] }, { policy });
    const report = await deliverMessage(BODY, options);
    expect(clock.sleeps).toEqual([500, 1_000]);
    expect(report.targets).toEqual([{ url: A, attempts: 3, last: { kind: "response", status: 500 }, result: "failed", reason: "gave up after 3 attempts" }]);
  });

  it("delivers when one URL succeeds and cancels the other's in-flight request without retrying it", async () => {
    const { transport, events, options } = setup({ [A]: [ok200], [B]: [hangUntilAborted] });
    const report = await deliverMessage(BODY, options);
    expect(report).toEqual({
      outcome: "delivered",
      deliveredTo: A,
      attempts: 2,
      durationMs: 0,
      targets: [
        { url: A, attempts: 1, last: { kind: "response", status: 200 }, result: "delivered" },
        { url: B, attempts: 1, last: undefined, result: "cancelled" },
      ],
    });
    expect(transport.callsTo(B)).toHaveLength(1);
    expect(transport.callsTo(B)[0]?.signal.aborted).toBe(true);
    expect(events.filter((event) => event.type === "failed")).toEqual([]);
  });

  it("cancels a URL that is waiting to retry when another URL succeeds", async () => {
    let answerA: (() => void) | undefined;
    const aAnswered = new Promise<void>((resolve) => (answerA = resolve));
    const { clock, transport, options } = setup({
      [A]: [
        async () => {
          await aAnswered;
          return ok200;
        },
      ],
      [B]: [status(503)],
    });
    clock.onSleep = (_ms, signal) => {
      answerA?.();
      return untilAborted(signal);
    };
    const report = await deliverMessage(BODY, options);
    expect(clock.sleeps).toEqual([500]);
    expect(report.outcome).toBe("delivered");
    expect(report.deliveredTo).toBe(A);
    expect(report.targets[1]).toEqual({ url: B, attempts: 1, last: { kind: "response", status: 503 }, result: "cancelled" });
    expect(transport.callsTo(B)).toHaveLength(1);
  });

  it("fails, with a failed event, when every URL fails finally", async () => {
    const { events, options } = setup({ [A]: [status(400)], [B]: [status(501)] });
    const report = await deliverMessage(BODY, options);
    expect(report).toEqual({
      outcome: "failed",
      deliveredTo: undefined,
      attempts: 2,
      durationMs: 0,
      targets: [
        { url: A, attempts: 1, last: { kind: "response", status: 400 }, result: "failed" },
        { url: B, attempts: 1, last: { kind: "response", status: 501 }, result: "failed" },
      ],
    });
    expect(events.filter((event) => event.type === "failed")).toEqual([{ type: "failed", report }]);
  });

  it("stops with outcome 'aborted' when the caller aborts during a retry sleep", async () => {
    const outer = new AbortController();
    const { clock, transport, events, options } = setup({ [A]: [status(503)] }, { signal: outer.signal });
    clock.onSleep = (_ms, signal) => {
      const woken = untilAborted(signal);
      outer.abort();
      return woken;
    };
    const report = await deliverMessage(BODY, options);
    expect(report).toEqual({
      outcome: "aborted",
      deliveredTo: undefined,
      attempts: 1,
      durationMs: 0,
      targets: [{ url: A, attempts: 1, last: { kind: "response", status: 503 }, result: "cancelled" }],
    });
    expect(transport.calls).toHaveLength(1);
    expect(events.map((event) => event.type)).toEqual(["attempt", "response", "retry"]);
  });

  it("sends nothing when the caller's signal is already aborted", async () => {
    const outer = new AbortController();
    outer.abort();
    const { transport, options } = setup({ [A]: [ok200] }, { signal: outer.signal });
    const report = await deliverMessage(BODY, options);
    expect(report.outcome).toBe("aborted");
    expect(report.targets).toEqual([{ url: A, attempts: 0, last: undefined, result: "cancelled" }]);
    expect(transport.calls).toEqual([]);
  });

  it("signs the exact body bytes and sends the fixed headers, then the URL's static headers", async () => {
    const { transport, options } = setup(
      { [A]: [ok200] },
      { sharedSecret: "s3cret", targets: [target(A, { Authorization: "Bearer t0k", "X-Team": "growth" })] },
    );
    await deliverMessage(BODY, options);
    const headers = transport.calls[0]?.headers;
    expect(headers).toEqual({
      "Content-Type": "application/json",
      "User-Agent": "wh/0.1.0",
      "X-Signature": BODY_SIGNATURE,
      Authorization: "Bearer t0k",
      "X-Team": "growth",
    });
    expect(Object.keys(headers ?? {})).toEqual(["Content-Type", "User-Agent", "X-Signature", "Authorization", "X-Team"]);
    expect(transport.calls[0]?.timeoutMs).toBe(5_000);
  });

  it("sends no X-Signature when no secret is set", async () => {
    const { transport, options } = setup({ [A]: [ok200] });
    await deliverMessage(BODY, options);
    expect(transport.calls[0]?.headers).toEqual({ "Content-Type": "application/json", "User-Agent": "wh/0.1.0" });
  });

  it("sends the same UTF-8 body bytes, with the same signature, on every retry and to every URL", async () => {
    const body = '{"version":1,"type":"identify","userId":"u1","traits":{"name":"Zoë 😀"},"messageId":"m-2","timestamp":"2026-11-21T09:30:08.276Z"}';
    const { transport, options } = setup(
      { [A]: [status(503), status(503), status(404)], [B]: [status(500), status(400)] },
      { sharedSecret: "key with spaces and ünïcödé" },
    );
    await deliverMessage(body, options);
    expect(transport.calls).toHaveLength(5);
    for (const call of transport.calls) {
      expect(call.body.equals(Buffer.from(body, "utf8"))).toBe(true);
      expect(call.headers["X-Signature"]).toBe("a56ce861d5279cf0c1d8552f5ca2ff4b965a1f4b");
    }
  });

  it("reports a URL with its password masked but posts to the real URL", async () => {
    const secretUrl = "https://hook-user:hunter2@hooks.example.com/in";
    const { transport, events, options } = setup({ [secretUrl]: [status(503), status(404)] });
    const report = await deliverMessage(BODY, options);
    const masked = "https://***:***@hooks.example.com/in";
    expect(report.targets[0]?.url).toBe(masked);
    expect(events.filter((event) => event.type !== "failed").map((event) => event.url)).toEqual([masked, masked, masked, masked, masked]);
    expect(JSON.stringify(events)).not.toContain("hunter2");
    expect(JSON.stringify(report)).not.toContain("hunter2");
    expect(transport.calls[0]?.url.password).toBe("hunter2");
  });

  it("measures durationMs from the clock", async () => {
    const { options } = setup({ [A]: [status(503), ok200] }, {}, 250);
    const report = await deliverMessage(BODY, options);
    expect(report.durationMs).toBe(250 + 500 + 250);
    expect(START_MS).toBe(Date.parse("2026-11-21T09:30:08.276Z"));
  });
});

describe("buildRequestHeaders", () => {
  it("signs with the secret when one is set", () => {
    expect(buildRequestHeaders(Buffer.from("{}"), "wh/0.1.0", "S")).toEqual({
      "Content-Type": "application/json",
      "User-Agent": "wh/0.1.0",
      "X-Signature": signBody("S", "{}"),
    });
  });
});

describe("describeOutcome", () => {
  it("describes a response by its status, an error by its message, and no outcome as no answer", () => {
    expect(describeOutcome({ kind: "response", status: 503 })).toBe("HTTP 503");
    expect(describeOutcome({ kind: "error", code: "tls", message: "self-signed certificate" })).toBe("self-signed certificate");
    expect(describeOutcome(undefined)).toBe("no answer");
  });
});

describe("deliverMessage with scheme standard", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

  it("signs every attempt at its own time with the same webhook-id (the messageId), and sends no X-Signature", async () => {
    const { clock, transport, options } = setup({ [A]: [status(503), status(503), ok200] }, { sharedSecret: secret, scheme: "standard", random: () => 1 });
    clock.onSleep = () => {
      clock.nowMs += 60_000;
    };
    const report = await deliverMessage(BODY, options);
    expect(report.outcome).toBe("delivered");
    const calls = transport.callsTo(A);
    expect(calls.map((call) => call.headers["webhook-id"])).toEqual(["m-1", "m-1", "m-1"]);
    const stamps = calls.map((call) => Number(call.headers["webhook-timestamp"]));
    expect(stamps[0]).toBe(Math.floor(START_MS / 1000));
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(60);
    expect(stamps[2]! - stamps[1]!).toBeGreaterThanOrEqual(60);
    for (const call of calls) {
      expect(call.headers["X-Signature"]).toBeUndefined();
      const values = { id: call.headers["webhook-id"], timestamp: call.headers["webhook-timestamp"], signature: call.headers["webhook-signature"] };
      expect(verifyStandard(secret, values, call.body, { nowMs: Number(values.timestamp) * 1000 })).toEqual({ ok: true });
    }
  });

  it("signs a batch's whole body, not its first event, under a webhook-id hashed from it", async () => {
    const batch = `[${BODY},${BODY.replace("m-1", "m-2")}]`;
    const { transport, options } = setup({ [A]: [ok200] }, { sharedSecret: secret, scheme: "standard", signedText: BODY });
    await deliverMessage(batch, options);
    const [call] = transport.callsTo(A);
    const values = { id: call?.headers["webhook-id"], timestamp: call?.headers["webhook-timestamp"], signature: call?.headers["webhook-signature"] };
    expect(values.id).toMatch(/^msg_/);
    expect(verifyStandard(secret, values, batch, { nowMs: START_MS })).toEqual({ ok: true });
  });

  it("refuses a secret that is not whsec_ before any attempt", async () => {
    const { transport, options } = setup({ [A]: [ok200] }, { sharedSecret: "s3cret", scheme: "standard" });
    await expect(deliverMessage(BODY, options)).rejects.toThrow(/options.sharedSecret is not a Standard Webhooks secret/);
    expect(transport.calls).toHaveLength(0);
  });
});
