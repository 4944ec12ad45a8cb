import { afterEach, describe, expect, it } from "vitest";
import { createHarness, deliver, targetOf, wait } from "./support.js";

const BODY = '{"version":1,"type":"group","userId":"u1","groupId":"g-1","traits":{},"timestamp":"2026-11-21T09:30:08.276Z"}';

describe("deliverMessage to several URLs at once", () => {
  const harness = createHarness();
  afterEach(() => harness.close());

  it("T25 is delivered to the URL that succeeds while the other answers 500", async () => {
    const bad = await harness.server({ replies: [500] });
    const good = await harness.server({ replies: [200] });
    const { report } = await deliver(BODY, { targets: [targetOf(bad.url), targetOf(good.url)], transport: harness.transport() });

    expect(report.outcome).toBe("delivered");
    expect(report.deliveredTo).toBe(good.url);
    expect(report.targets.map((target) => [target.url, target.result])).toEqual([
      [bad.url, "cancelled"],
      [good.url, "delivered"],
    ]);
    expect(good.requests).toHaveLength(1);
  });

  it("T26 stops retrying the other URLs once one URL succeeds", async () => {
    const bad = await harness.server({ replies: [503] });
    const good = await harness.server({ replies: [{ status: 200, delayMs: 150 }] });
    const { report } = await deliver(BODY, { targets: [targetOf(bad.url), targetOf(good.url)], transport: harness.transport() });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: good.url });
    const badReport = report.targets.find((target) => target.url === bad.url);
    expect(badReport?.result).toBe("cancelled");
    // The 503 URL was being retried while the good one was slow to answer.
    expect(bad.requests.length).toBeGreaterThanOrEqual(2);
    await wait(20); // lets a request sent just before the cancel land
    const countAtDelivery = bad.requests.length;
    await wait(150); // several backoff ceilings (capMs 20)
    expect(bad.requests.length).toBe(countAtDelivery);
    expect(bad.requests.length).toBeLessThanOrEqual(badReport?.attempts ?? 0);
  });

  it("T27 fails with each URL's last answer when none succeeds", async () => {
    const gone = await harness.server({ replies: [403] });
    const broken = await harness.server({ replies: [501] });
    const { report, events } = await deliver(BODY, { targets: [targetOf(gone.url), targetOf(broken.url)], transport: harness.transport() });

    expect(report.outcome).toBe("failed");
    expect(report.deliveredTo).toBeUndefined();
    expect(report.attempts).toBe(2);
    expect(report.targets).toEqual([
      expect.objectContaining({ url: gone.url, result: "failed", attempts: 1, last: expect.objectContaining({ kind: "response", status: 403 }) }),
      expect.objectContaining({ url: broken.url, result: "failed", attempts: 1, last: expect.objectContaining({ kind: "response", status: 501 }) }),
    ]);
    expect(events.filter((event) => event.type === "failed")).toEqual([{ type: "failed", report }]);
  });

  it("T28 posts the same signed bytes to every URL", async () => {
    const first = await harness.server({ replies: [{ status: 503, delayMs: 50 }] });
    const second = await harness.server({ replies: [{ status: 503, delayMs: 50 }] });
    const { report } = await deliver(BODY, {
      targets: [targetOf(first.url, { "X-Tenant": "one" }), targetOf(second.url, { "X-Tenant": "two" })],
      transport: harness.transport(),
      sharedSecret: "s3cret",
      policy: { baseMs: 5, capMs: 20, windowMs: 2_000, maxAttempts: 1 },
    });

    expect(report.outcome).toBe("failed");
    const [a] = first.requests;
    const [b] = second.requests;
    expect(a?.body.equals(Buffer.from(BODY))).toBe(true);
    expect(b?.body.equals(Buffer.from(BODY))).toBe(true);
    expect(a?.headers["x-signature"]).toBe(b?.headers["x-signature"]);
    expect(a?.headers["x-tenant"]).toBe("one");
    expect(b?.headers["x-tenant"]).toBe("two");
  });
});
