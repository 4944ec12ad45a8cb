import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, deliver, targetOf } from "./support.js";

const tls = (name: string): string => readFileSync(new URL(`../../fixtures/tls/${name}`, import.meta.url), "utf8");
const CA = tls("ca.crt");
const SIGNED = { key: tls("server.key"), cert: tls("server.crt") };
const SELF_SIGNED = { key: tls("self-signed.key"), cert: tls("self-signed.crt") };

const BODY = '{"version":1,"type":"track","userId":"u1","event":"Secure","properties":{},"timestamp":"2026-11-21T09:30:08.276Z"}';

describe("deliverMessage over HTTPS to a real node:https server", () => {
  const harness = createHarness();
  afterEach(() => harness.close());

  it("refuses a self-signed certificate once, names the problem, and sends no request", async () => {
    const server = await harness.server({ tls: SELF_SIGNED });
    const { report, events } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport() });

    expect(report.outcome).toBe("failed");
    expect(report.attempts).toBe(1);
    expect(report.targets[0]).toMatchObject({ url: server.url, attempts: 1, result: "failed", last: { kind: "error", code: "tls" } });
    const last = report.targets[0]?.last;
    const message = last?.kind === "error" ? last.message : "";
    expect(message).toMatch(/certificate not trusted/i);
    expect(message).toMatch(/self[- ]signed/i);
    expect(events.filter((event) => event.type === "retry")).toHaveLength(0);
    expect(server.requests).toHaveLength(0);
  });

  it("delivers to a server whose certificate the extra CA signed", async () => {
    const server = await harness.server({ tls: SIGNED });
    const { report } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport({ ca: [CA] }), sharedSecret: "s" });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: server.url, attempts: 1 });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body.toString("utf8")).toBe(BODY);
  });

  it("refuses the CA-signed server without the extra CA, with no retry and no request", async () => {
    const server = await harness.server({ tls: SIGNED });
    const { report } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport() });

    expect(report.outcome).toBe("failed");
    expect(report.targets[0]).toMatchObject({ attempts: 1, result: "failed", last: { kind: "error", code: "tls" } });
    const last = report.targets[0]?.last;
    expect(last?.kind === "error" ? last.message : "").toMatch(/certificate not trusted/i);
    expect(server.requests).toHaveLength(0);
  });

  it("still refuses a self-signed certificate when an unrelated extra CA is trusted", async () => {
    const server = await harness.server({ tls: SELF_SIGNED });
    const { report } = await deliver(BODY, { targets: [targetOf(server.url)], transport: harness.transport({ ca: [CA] }) });

    expect(report.outcome).toBe("failed");
    expect(report.targets[0]).toMatchObject({ attempts: 1, last: { kind: "error", code: "tls" } });
    expect(server.requests).toHaveLength(0);
  });

  it("delivers to the other URL when one URL's certificate is refused", async () => {
    const untrusted = await harness.server({ tls: SELF_SIGNED });
    // Slow enough that the refused handshake is over before the delivery cancels the other URL.
    const trusted = await harness.server({ tls: SIGNED, replies: [{ status: 200, delayMs: 100 }] });
    const { report } = await deliver(BODY, { targets: [targetOf(untrusted.url), targetOf(trusted.url)], transport: harness.transport({ ca: [CA] }) });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: trusted.url });
    expect(report.targets[0]).toMatchObject({ url: untrusted.url, result: "failed", attempts: 1, last: { kind: "error", code: "tls" } });
    expect(untrusted.requests).toHaveLength(0);
  });
});
