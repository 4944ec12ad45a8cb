import { describe, expect, it } from "vitest";
import type { DeliveryReport } from "../../src/core/deliver.js";
import type { AttemptOutcome } from "../../src/core/retry-policy.js";
import { FailureStreak } from "../../src/engine/failure-streak.js";

/** A failed delivery whose URLs each ended with the given answer or error. */
function failed(...lasts: [url: string, last: AttemptOutcome][]): DeliveryReport {
  return {
    outcome: "failed",
    deliveredTo: undefined,
    attempts: lasts.length,
    durationMs: 3,
    targets: lasts.map(([url, last]) => ({ url, attempts: 1, last, result: "failed" })),
  };
}

const notFound = (body?: string): AttemptOutcome => ({ kind: "response", status: 404, body });
const refused: AttemptOutcome = { kind: "error", code: "connection", message: "connect ECONNREFUSED 127.0.0.1:9" };

describe("FailureStreak", () => {
  it("stops at the limit of identical failures, whatever each answer's body says", () => {
    const streak = new FailureStreak(3);
    expect(streak.note("failed", failed(["http://a/x", notFound("request id 1")]))).toBe(false);
    expect(streak.note("failed", failed(["http://a/x", notFound("request id 2")]))).toBe(false);
    expect(streak.note("failed", failed(["http://a/x", notFound()]))).toBe(true);
    expect(streak.stop).toEqual({ failures: 3, reason: "http://a/x → HTTP 404" });
    // It stops once: the failures of deliveries still in flight do not stop it again.
    expect(streak.note("failed", failed(["http://a/x", notFound()]))).toBe(false);
  });

  it("starts again on a delivered event or on another failure; invalid and skipped lines leave it be", () => {
    const streak = new FailureStreak(2);
    expect(streak.note("failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.note("delivered", undefined)).toBe(false);
    expect(streak.note("failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.note("failed", failed(["http://a/x", refused]))).toBe(false);
    expect(streak.note("failed", failed(["http://b/x", refused]))).toBe(false);
    expect(streak.note("failed", failed(["http://b/x", refused], ["http://a/x", notFound()]))).toBe(false);
    expect(streak.note("invalid", undefined)).toBe(false);
    expect(streak.note("skipped", undefined)).toBe(false);
    expect(streak.note("failed", failed(["http://b/x", refused], ["http://a/x", notFound()]))).toBe(true);
    expect(streak.stop?.reason).toBe("http://b/x → connect ECONNREFUSED 127.0.0.1:9; http://a/x → HTTP 404");
  });

  it.each([0, undefined])("never stops with a limit of %j", (limit) => {
    const streak = new FailureStreak(limit);
    for (let index = 0; index < 1_000; index += 1) expect(streak.note("failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.stop).toBeUndefined();
  });
});
