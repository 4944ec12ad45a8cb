import { isObject, requireArgument } from "./arguments.js";
import { formatDurationMs } from "./duration.js";

/** What one attempt to post to one URL came to. */
export type AttemptOutcome =
  | {
      kind: "response";
      status: number;
      retryAfter?: string | undefined;
      /** The start of the answer's body (at most 1 KB, as text), kept for answers that are not 2xx. */
      body?: string | undefined;
      /** A redirect's Location (followed only in actions mode: core/redirect.ts). */
      location?: string | undefined;
    }
  | { kind: "error"; code: TransportErrorCode; message: string };

/**
 * timeout: no whole response within the timeout. connection: refused, reset, DNS.
 * tls: the certificate is not trusted (no request was sent). aborted: we cancelled it.
 * other: anything else undici reports (a bad header value, say).
 */
export type TransportErrorCode = "timeout" | "connection" | "tls" | "aborted" | "other";

export interface RetryPolicy {
  /** First backoff ceiling. Default 1 s. */
  baseMs: number;
  /** Largest backoff ceiling. Default 10 min. */
  capMs: number;
  /** No attempt starts later than this after the first; the last wait is cut to end then. Default 4 h. */
  windowMs: number;
  /** Attempts at most, counting the first. Default unlimited (the window decides). */
  maxAttempts: number;
  /** A longer Retry-After is waited only this long (the client's 300 s). Default unlimited. */
  maxRetryAfterMs?: number | undefined;
  /** Which statuses are retried: the classic destination's (default) or the Actions one's. */
  statuses?: RetryStatuses | undefined;
}

export type RetryStatuses = "classic" | "actions";

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  baseMs: 1_000,
  capMs: 600_000,
  windowMs: 4 * 3_600_000,
  maxAttempts: Number.POSITIVE_INFINITY,
};

export type Classification = "success" | "retryable" | "final";

/**
 * 2xx succeeds. Retried: timeouts, connection errors, 408, 410, 429, 460 and 5xx but 501 and 505
 * (classic). How Segment's classic pipeline retries a destination is not published; the 4xx it
 * retries are those of Segment's own retry rule as its libraries publish it (analytics-node 3.1.0
 * plugins/segmentio/publisher.ts: "4xx are non-retriable except a specific allowlist", 408, 410,
 * 429, 460; 460 is an AWS load balancer's "client closed the connection"). Segment's Actions
 * destinations retry 408, 423, 429 and every 5xx but 501 (actions-core errors.ts,
 * RetryableStatusCodes). Final: other 4xx, 3xx (a redirect not followed), TLS and
 * other errors.
 */
export function classifyOutcome(outcome: AttemptOutcome, statuses: RetryStatuses = "classic"): Classification {
  requireArgument(outcome?.kind === "response" || outcome?.kind === "error", "outcome", 'an AttemptOutcome ({ kind: "response" | "error", … })', outcome);
  requireArgument(statuses === "classic" || statuses === "actions", "statuses", '"classic" or "actions"', statuses);
  if (outcome.kind === "error") return outcome.code === "timeout" || outcome.code === "connection" ? "retryable" : "final";
  const { status } = outcome;
  if (status >= 200 && status < 300) return "success";
  if (status === 408 || status === 429 || (statuses === "actions" ? status === 423 : status === 410 || status === 460)) return "retryable";
  if (status >= 500 && status !== 501 && (statuses === "actions" || status !== 505)) return "retryable";
  return "final";
}

const HTTP_DATE_START = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /;

/**
 * A Retry-After header as milliseconds from now: delta-seconds or an HTTP date
 * (a date in the past means at once). Undefined when absent or unreadable.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  // An HTTP date starts with a day name (IMF-fixdate, RFC 850 or asctime); Date.parse alone
  // would read "1.5" or "-1" as dates and turn a bad header into "retry at once".
  if (!HTTP_DATE_START.test(text)) return undefined;
  const dateMs = Date.parse(text);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

/** Full jitter: a uniform delay in [0, min(cap, base × 2^(attempt-1))). */
export function backoffMs(attempt: number, random: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt - 1, 52));
  return Math.floor(random * ceiling);
}

export type RetryDecision =
  | { action: "done"; classification: "success" | "final" }
  | { action: "retry"; delayMs: number }
  | { action: "give-up"; reason: string };

export interface RetryInput {
  outcome: AttemptOutcome;
  /** Attempts made so far, this one included (1 after the first). */
  attempt: number;
  firstAttemptAtMs: number;
  nowMs: number;
  /** A number in [0, 1): Math.random() in use, a fixed value in tests. */
  random: number;
}

/** Decides, purely, whether and when the next attempt to one URL starts. */
export function decideRetry(input: RetryInput, policy: RetryPolicy): RetryDecision {
  requireArgument(isObject(input), "input", "a RetryInput", input);
  requireArgument(isObject(policy), "policy", "a RetryPolicy", policy);
  const classification = classifyOutcome(input.outcome, policy.statuses);
  if (classification !== "retryable") return { action: "done", classification };
  if (input.attempt >= policy.maxAttempts) return { action: "give-up", reason: `gave up after ${input.attempt} attempts` };
  const askedMs = input.outcome.kind === "response" ? parseRetryAfterMs(input.outcome.retryAfter, input.nowMs) : undefined;
  const retryAfterMs = askedMs === undefined || policy.maxRetryAfterMs === undefined ? askedMs : Math.min(askedMs, policy.maxRetryAfterMs);
  const leftMs = policy.windowMs - (input.nowMs - input.firstAttemptAtMs);
  // The receiver asked not to be tried before then: trying sooner, at the window's end, would not honour it.
  if (retryAfterMs !== undefined && retryAfterMs > leftMs)
    return { action: "give-up", reason: `Retry-After asks to wait ${formatDurationMs(retryAfterMs)}, past the end of the retry window` };
  if (leftMs <= 0) return { action: "give-up", reason: "retry window closed" };
  // The backoff is a floor under Retry-After: "0" or a date in the past cannot make a storm. A wait
  // that would pass the window's end is cut to it: retries go on until the window closes, as
  // "retrying until 14:05:00" says, with a last attempt then, not up to 10 min before.
  const delayMs = Math.max(retryAfterMs ?? 0, backoffMs(input.attempt, input.random, policy));
  return { action: "retry", delayMs: Math.min(delayMs, leftMs) };
}
