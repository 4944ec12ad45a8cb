import { describe, expect, it } from "vitest";
import type { DeliveryReport } from "../../src/core/deliver.js";
import type { AttemptOutcome } from "../../src/core/retry-policy.js";
import type { DeliveryJob } from "../../src/engine/delivery-job.js";
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

let lines = 0;
/** The next line of the input (only its number counts here). */
function job(): DeliveryJob {
  lines += 1;
  return { number: lines, original: "{}", prepared: { ok: false, kind: "invalid-json", error: "not read" } };
}

const notFound = (body?: string): AttemptOutcome => ({ kind: "response", status: 404, body });
const refused: AttemptOutcome = { kind: "error", code: "connection", message: "connect ECONNREFUSED 127.0.0.1:9" };

describe("FailureStreak", () => {
  it("stops at the limit of identical failures, whatever each answer's body says", () => {
    lines = 0;
    const streak = new FailureStreak(3);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound("request id 1")]))).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound("request id 2")]))).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]))).toBe(true);
    expect(streak.stop).toEqual({ outcome: "failed", failures: 3, reason: "http://a/x → HTTP 404", firstLine: 1, wrongPath: true });
    // It stops once: the failures of deliveries still in flight do not stop it again.
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]))).toBe(false);
  });

  it("starts again on a delivered event or on another failure; invalid and skipped lines leave it be", () => {
    const streak = new FailureStreak(2);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.note(job(), "delivered", undefined)).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://a/x", refused]))).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://b/x", refused]))).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://b/x", refused], ["http://a/x", notFound()]))).toBe(false);
    expect(streak.note(job(), "invalid", undefined, "You must pass 'event'.")).toBe(false);
    expect(streak.note(job(), "skipped", undefined)).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://b/x", refused], ["http://a/x", notFound()]))).toBe(true);
    expect(streak.stop?.reason).toBe("http://b/x → connect ECONNREFUSED 127.0.0.1:9; http://a/x → HTTP 404");
    // One URL that refused the connection: not a path to fix.
    expect(streak.stop?.wrongPath).toBe(false);
  });

  it.each([
    [404, true],
    [405, true],
    [410, true],
    [403, false],
    [503, false],
  ])("takes HTTP %i from every URL for a wrong path: %j", (status, wrong) => {
    const streak = new FailureStreak(1);
    streak.note(job(), "failed", failed(["http://a/x", { kind: "response", status }], ["http://b/x", { kind: "response", status }]));
    expect(streak.stop?.wrongPath).toBe(wrong);
  });

  it("counts identical invalid lines in a row as they are read: a line read valid or another reason starts again; failures leave it be", () => {
    lines = 0;
    const streak = new FailureStreak(3);
    const missingEvent = "You must pass 'event'.";
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
    streak.readValid();
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
    expect(streak.note(job(), "invalid", undefined, "type: missing type")).toBe(false);
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
    // A delivery that ends meanwhile (read long before) is not a line between them.
    expect(streak.note(job(), "delivered", undefined, undefined)).toBe(false);
    expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]), undefined)).toBe(false);
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(true);
    expect(streak.stop).toEqual({ outcome: "invalid", failures: 3, reason: missingEvent, firstLine: 5, wrongPath: false });
    expect(streak.note(job(), "invalid", undefined, missingEvent)).toBe(false);
  });

  it.each([0, undefined])("never stops with a limit of %j", (limit) => {
    const streak = new FailureStreak(limit);
    for (let index = 0; index < 1_000; index += 1) expect(streak.note(job(), "failed", failed(["http://a/x", notFound()]))).toBe(false);
    expect(streak.stop).toBeUndefined();
  });
});
