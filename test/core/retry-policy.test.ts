import { describe, expect, it } from "vitest";
import {
  backoffMs,
  classifyOutcome,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  parseRetryAfterMs,
  type AttemptOutcome,
  type Classification,
  type RetryDecision,
  type RetryInput,
  type RetryPolicy,
} from "../../src/core/retry-policy.js";

const NOW = Date.parse("2026-11-21T09:30:08.000Z");
const HOUR = 3_600_000;
const response = (status: number, retryAfter?: string): AttemptOutcome =>
  retryAfter === undefined ? { kind: "response", status } : { kind: "response", status, retryAfter };
const error = (code: "timeout" | "connection" | "tls" | "aborted" | "other"): AttemptOutcome => ({ kind: "error", code, message: code });

describe("the default retry policy", () => {
  it("has base 1 s, cap 10 min, a 4 h window and no attempt limit", () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ baseMs: 1_000, capMs: 600_000, windowMs: 4 * HOUR, maxAttempts: Number.POSITIVE_INFINITY });
  });
});

describe("classifyOutcome", () => {
  const cases: [string, AttemptOutcome, Classification][] = [
    ["T01", response(200), "success"],
    ["T02", response(204), "success"],
    ["T03", response(299), "success"],
    ["T04", response(408), "retryable"],
    ["T05", response(429), "retryable"],
    ["T06", response(500), "retryable"],
    ["T07", response(502), "retryable"],
    ["T08", response(503), "retryable"],
    ["T09", response(504), "retryable"],
    ["T10", response(599), "retryable"],
    ["T11", response(501), "final"],
    ["T12", response(505), "final"],
    ["T13", response(400), "final"],
    ["T14", response(401), "final"],
    ["T15", response(404), "final"],
    ["T16", response(410), "retryable"],
    ["T16b", response(460), "retryable"],
    ["T17", response(422), "final"],
    ["T18", response(301), "final"],
    ["T19", response(302), "final"],
    ["T20", response(304), "final"],
    ["T21", error("timeout"), "retryable"],
    ["T22", error("connection"), "retryable"],
    ["T23", error("tls"), "final"],
    ["T24", error("other"), "final"],
    ["T25", error("aborted"), "final"],
  ];
  it.each(cases)("%s classifies %j as %s", (_id, outcome, expected) => {
    expect(classifyOutcome(outcome)).toBe(expected);
  });

  // Segment's Actions destinations (actions-core errors.ts): 408, 423, 429 and 5xx but 501.
  const actions: [string, AttemptOutcome, Classification][] = [
    ["A01", response(423), "retryable"],
    ["A02", response(505), "retryable"],
    ["A03", response(501), "final"],
    ["A04", response(408), "retryable"],
    ["A05", response(410), "final"],
    ["A06", response(511), "retryable"],
  ];
  it.each(actions)("%s in actions mode classifies %j as %s", (_id, outcome, expected) => {
    expect(classifyOutcome(outcome, "actions")).toBe(expected);
  });
});

describe("parseRetryAfterMs", () => {
  const cases: [string, string | undefined, number | undefined][] = [
    ["T26", "120", 120_000],
    ["T27", "0", 0],
    ["T28", " 7 ", 7_000],
    ["T29", "Sat, 21 Nov 2026 09:31:08 GMT", 60_000],
    ["T30", "Sat, 21 Nov 2026 09:29:08 GMT", 0],
    ["T31", undefined, undefined],
    ["T32", "", undefined],
    ["T33", "soon", undefined],
    ["T34", "7 seconds", undefined],
    // Neither delta-seconds nor an HTTP date (RFC 9110 §10.2.3): they must not mean "retry at once".
    ["T35", "1.5", undefined],
    ["T36", "-1", undefined],
    ["T37", "abc 5", undefined],
  ];
  it.each(cases)("%s reads %j as %s ms", (_id, value, expected) => {
    expect(parseRetryAfterMs(value, NOW)).toBe(expected);
  });
});

describe("backoffMs (full jitter)", () => {
  const cases: [string, number, number, number][] = [
    ["T38", 1, 0, 0],
    ["T39", 1, 0.999, 999],
    ["T40", 2, 0.999, 1_998],
    ["T41", 3, 0.999, 3_996],
    ["T42", 4, 0.5, 4_000],
    ["T43", 10, 0.999, 511_488],
    ["T44", 11, 0.999, 599_400],
    ["T45", 1_000, 0.999, 599_400],
    ["T46", 11, 0, 0],
    ["T47", 1, 0.999_999_999, 999],
  ];
  it.each(cases)("%s waits at attempt %i with random %d: %i ms", (_id, attempt, random, expected) => {
    expect(backoffMs(attempt, random, DEFAULT_RETRY_POLICY)).toBe(expected);
  });
});

describe("decideRetry", () => {
  const input = (outcome: AttemptOutcome, over: Partial<RetryInput> = {}): RetryInput => ({
    outcome,
    attempt: 1,
    firstAttemptAtMs: NOW,
    nowMs: NOW,
    random: 0.5,
    ...over,
  });
  const ingest: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 10 };
  const cases: [string, string, RetryInput, RetryPolicy, RetryDecision][] = [
    ["T48", "a 200 is done", input(response(200)), DEFAULT_RETRY_POLICY, { action: "done", classification: "success" }],
    ["T49", "a 404 is done, final", input(response(404)), DEFAULT_RETRY_POLICY, { action: "done", classification: "final" }],
    ["T50", "a TLS error is done, final", input(error("tls")), DEFAULT_RETRY_POLICY, { action: "done", classification: "final" }],
    ["T51", "a first 503 retries after jittered backoff", input(response(503)), DEFAULT_RETRY_POLICY, { action: "retry", delayMs: 500 }],
    [
      "T52",
      "a third timeout retries within 4 s",
      input(error("timeout"), { attempt: 3, random: 0.25 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 1_000 },
    ],
    ["T53", "a 503 honours Retry-After over backoff", input(response(503, "7")), DEFAULT_RETRY_POLICY, { action: "retry", delayMs: 7_000 }],
    [
      "T54",
      "a 429 honours a Retry-After date",
      input(response(429, "Sat, 21 Nov 2026 09:30:38 GMT")),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 30_000 },
    ],
    ["T55", "an unreadable Retry-After falls back to backoff", input(response(503, "soon")), DEFAULT_RETRY_POLICY, { action: "retry", delayMs: 500 }],
    ["T56", "Retry-After on a final status changes nothing", input(response(404, "7")), DEFAULT_RETRY_POLICY, { action: "done", classification: "final" }],
    [
      "T57",
      "a wait that would end after the window is cut to the window's end: a last attempt as it closes",
      input(response(503), { nowMs: NOW + 4 * HOUR - 499 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 499 },
    ],
    [
      "T57b",
      "an attempt that ends as the window closes, or after, gives up",
      input(response(503), { nowMs: NOW + 4 * HOUR }),
      DEFAULT_RETRY_POLICY,
      { action: "give-up", reason: "retry window closed" },
    ],
    [
      "T57c",
      "a Retry-After within the window, under a backoff past it, waits to the window's end",
      input(response(503, "10"), { attempt: 20, nowMs: NOW + 4 * HOUR - 60_000 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 60_000 },
    ],
    [
      "T57d",
      "a Retry-After a second past the window's end gives up: trying sooner would not honour it",
      input(response(503, "61"), { nowMs: NOW + 4 * HOUR - 60_000 }),
      DEFAULT_RETRY_POLICY,
      { action: "give-up", reason: "Retry-After asks to wait 1m 1s, past the end of the retry window" },
    ],
    [
      "T58",
      "a retry that starts exactly as the window ends goes ahead",
      input(response(503), { nowMs: NOW + 4 * HOUR - 500 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 500 },
    ],
    [
      "T59",
      "a Retry-After beyond the window gives up",
      input(response(503, String(4 * 3_600 + 1))),
      DEFAULT_RETRY_POLICY,
      { action: "give-up", reason: "Retry-After asks to wait 4h 1s, past the end of the retry window" },
    ],
    [
      "T63",
      "Retry-After: 0 waits the backoff, not zero",
      input(response(503, "0"), { attempt: 3, random: 0.5 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 2_000 },
    ],
    [
      "T64",
      "a Retry-After date in the past waits the backoff",
      input(response(429, "Wed, 21 Oct 2015 07:28:00 GMT"), { attempt: 2 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 1_000 },
    ],
    [
      "T65",
      "a Retry-After shorter than the backoff waits the backoff",
      input(response(503, "1"), { attempt: 5, random: 0.5 }),
      DEFAULT_RETRY_POLICY,
      { action: "retry", delayMs: 8_000 },
    ],
    ["T60", "attempt 9 of 10 still retries", input(response(503), { attempt: 9, random: 0 }), ingest, { action: "retry", delayMs: 0 }],
    ["T61", "attempt 10 of 10 gives up", input(response(503), { attempt: 10 }), ingest, { action: "give-up", reason: "gave up after 10 attempts" }],
    ["T62", "a success at the attempt limit is still done", input(response(200), { attempt: 10 }), ingest, { action: "done", classification: "success" }],
    ["T63", "a connection error retries", input(error("connection"), { attempt: 2, random: 0.999 }), DEFAULT_RETRY_POLICY, { action: "retry", delayMs: 1_998 }],
    ["T64", "a malformed Retry-After of 1.5 falls back to backoff", input(response(503, "1.5")), DEFAULT_RETRY_POLICY, { action: "retry", delayMs: 500 }],
  ];
  it.each(cases)("%s %s", (_id, _label, retryInput, policy, expected) => {
    expect(decideRetry(retryInput, policy)).toEqual(expected);
  });
});
