import type { Untrusted } from "../../core/untrusted.js";

// The JSON between the inspector's server (inspector-server.ts) and its page (src/browser/inspector/):
// types only, from modules that run anywhere, so that the Node project and the page's DOM project
// (tsconfig.browser.json) are checked against the same ones.

/** valid, valid-batch, invalid, missing, unchecked: wh listen's signature check; accepted, rejected: wh serve's. */
export type InspectorVerdict = "valid" | "valid-batch" | "invalid" | "missing" | "unchecked" | "accepted" | "rejected";

/** One line under an entry (a delivery attempt, how its delivery ended, a resend); its outcome colours it. */
interface InspectorLine {
  text: string;
  outcome: "delivered" | "failed" | "unchecked";
  /** wh serve with subscriptions: the subscription whose delivery the line is of. */
  subscription?: string | undefined;
}

/** With `wh listen --forward-to`: what the app answered, or why it could not be reached (receiver.ts's ForwardResult is one). */
type InspectorForward = { url: string; status: number; durationMs: number } | { url: string; error: Untrusted; durationMs: number };

/**
 * wh serve's: where an event's delivery stands (the list's delivery column). `attempts` counts
 * the attempts that got an answer or an error; `lastAnswer` is the last of them, described.
 */
export type InspectorDelivery =
  | { state: "pending" }
  | { state: "delivered"; status: number; attempts: number }
  | { state: "retrying"; attempts: number; nextAttemptAt: string; lastAnswer: string }
  | { state: "failed"; attempts: number; reason: string };

/**
 * What the inspector page shows of one request (`wh listen`) or accepted event (`wh serve`).
 * Everything in it came from outside: the page puts it on screen as text only.
 */
export interface InspectorEntry {
  id: number;
  kind: "request" | "event";
  /**
   * wh listen --ui --out: a request the capture file held when this run started. Its answer
   * (status, answer) was not recorded, and it is not kept to be resent.
   */
  earlier?: true | undefined;
  receivedAt: string;
  method: string;
  path: string;
  type: string;
  /** A track's event name (`event`), else empty. */
  event: string;
  user: string;
  size: number;
  verdict: InspectorVerdict;
  reason?: string | undefined;
  /** Credentials masked. */
  headers: Record<string, string>;
  /** The body's text, exactly as received. */
  body: string;
  status: number;
  answer: string;
  forwarded?: InspectorForward | undefined;
  /** How long the answer took: the app's with --forward-to (wh listen), the last delivery attempt's (wh serve). */
  durationMs?: number | undefined;
  /** Where a resend with no URL goes (credentials masked); absent: `origin` and the entry's path. */
  resendTo?: string | undefined;
  resends: InspectorLine[];
  /** wh serve's: each attempt to deliver the event, and how its delivery ended if not delivered. */
  deliveries?: InspectorLine[];
  /** wh serve's: where the event's delivery stands. */
  delivery?: InspectorDelivery | undefined;
}

/** The event stream's first frame: where requests came to, and what the page may ask for. */
export interface InspectorHello {
  origin: string;
  resend: boolean;
  /** Whether "retry now" (POST /api/retry-now) can cut waiting deliveries' waits short (wh serve). */
  retryNow: boolean;
}

/**
 * What the page posts to resend an entry: an empty URL means the one it came to. `body`, when
 * given and not the body as received, is sent instead, byte for byte as UTF-8, and must be
 * re-signed (`resign`): the original X-Signature is of the original bytes.
 */
export interface InspectorResendBody {
  url: string;
  resign: boolean;
  body?: string | undefined;
}

/** The answer to POST /api/retry-now: how many waiting deliveries were asked to try again. */
export interface InspectorRetried {
  retried: number;
}

/** The answer to POST /api/clear: how many entries the server forgot. */
export interface InspectorCleared {
  cleared: number;
}

/**
 * The frame a page is sent when it reads again after falling behind: how many requests it was
 * never shown (added and dropped from the server's window meanwhile). The newest follow.
 */
export interface InspectorMissed {
  missed: number;
}

/** The answer to an action that failed. */
export interface InspectorFailure {
  error: string;
}

/** A value as JSON.parse gives it back from JSON.stringify: what has a toJSON (Untrusted) is what that returns. */
export type AsJson<T> = T extends { toJSON(): infer J } ? J : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;
