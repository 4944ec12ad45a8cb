import { describe, expect, it } from "vitest";
import { Analytics, AnalyticsError, type DeliveryFailure, type QueuedMessage } from "../../../src/index.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { virtualClock } from "../../helpers/virtual-clock.js";

// The Analytics client with analytics-node's options and calls, against a real receiver on 127.0.0.1.

const startServer = closedAfterEach();
const WRITE_KEY = "wk_node";

describe("Analytics with analytics-node's habits", () => {
  it("sends to {host}{path}, flushes at maxEventsInBatch, and tells each call's callback", async () => {
    const server = await startServer();
    const analytics = new Analytics({ writeKey: WRITE_KEY, host: `http://127.0.0.1:${server.port}/`, path: "ingest/batch", maxEventsInBatch: 2 });
    const told: [unknown, QueuedMessage | undefined][] = [];
    const done = new Promise<void>((resolve) => {
      analytics.identify({ userId: "u1", traits: { plan: "pro" } }, (error, context) => told.push([error, context?.event]));
      analytics.track({ anonymousId: "a1", event: "Signed Up" }, (error, context) => {
        told.push([error, context?.event]);
        resolve();
      });
    });
    await done;
    await analytics.closeAndFlush({ timeout: 5_000 });

    expect(server.requests.map((request) => request.path)).toEqual(["/ingest/batch"]);
    expect(told).toEqual([
      [undefined, { type: "identify", messageId: expect.any(String) }],
      [undefined, { type: "track", messageId: expect.any(String) }],
    ]);
  });

  it("flushes after flushInterval, and retries maxRetries times, with httpRequestTimeout per request", async () => {
    const server = await startServer({ replies: [500] });
    const clock = virtualClock("2026-11-25T10:00:00.000Z");
    const analytics = new Analytics({
      writeKey: WRITE_KEY,
      host: `http://127.0.0.1:${server.port}`,
      flushInterval: 250,
      maxRetries: 2,
      httpRequestTimeout: 2_000,
      clock,
    });
    const failures: DeliveryFailure[] = [];
    analytics.on("error", (failure) => failures.push(failure));
    const callback = new Promise<DeliveryFailure | undefined>((resolve) => analytics.track({ userId: "u1", event: "E" }, (error) => resolve(error)));

    const error = await callback;
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/batch", "/v1/batch", "/v1/batch"]);
    expect(clock.slept[0]).toBe(250);
    expect(error).toMatchObject({ code: "delivery_failure", outcome: "failed", reason: expect.stringContaining("500") });
    expect(failures).toEqual([error]);
    await analytics.closeAndFlush();
  });

  it("emits no error event to nobody (it would throw), and closeAndFlush's timeout stops what is left, telling the callbacks", async () => {
    const server = await startServer({ replies: ["hang"] });
    const analytics = new Analytics({ writeKey: WRITE_KEY, host: `http://127.0.0.1:${server.port}`, flushAt: 1, maxRetries: 0 });
    const error = new Promise<DeliveryFailure | undefined>((resolve) => analytics.page({ userId: "u1", name: "Home" }, resolve));
    await analytics.closeAndFlush({ timeout: 50 });

    expect(await error).toMatchObject({ code: "delivery_failure", outcome: "aborted" });
  });

  it("refuses options that contradict each other, naming them", () => {
    const made = (options: object) => () => new Analytics({ writeKey: WRITE_KEY, ...options });
    expect(made({ host: "http://127.0.0.1:9", endpoint: "http://127.0.0.1:9" })).toThrow("give endpoint or host, not both: they name the same address");
    expect(made({ endpoint: "http://127.0.0.1:9", path: "/x" })).toThrow(/path goes with host/);
    expect(made({ host: "ftp://x" })).toThrow('host "ftp://x" is not an http or https URL');
    expect(made({ host: "http://127.0.0.1:9", maxRetries: -1 })).toThrow(
      new AnalyticsError("E_INVALID_OPTION", "maxRetries: must be a whole number of at least 0 (got -1)"),
    );
    expect(made({ host: "http://127.0.0.1:9", flushInterval: 0 })).toThrow(
      "flushInterval: must be a number of at least 1 and at most 2147483647 (Node's longest timer) (got 0)",
    );
  });
});
