import type { Untrusted } from "../core/untrusted.js";

// The JSON between the inspector's server (inspector-server.ts) and its page (src/browser/inspector/):
// types only, from modules that run anywhere, so that the Node project and the page's DOM project
// (tsconfig.browser.json) are checked against the same ones.

/** valid, valid-batch, invalid, missing, unchecked: wh listen's signature check; accepted, rejected: wh serve's. */
export type InspectorVerdict = "valid" | "valid-batch" | "invalid" | "missing" | "unchecked" | "accepted" | "rejected";

/** One line under an entry (a delivery attempt, how its delivery ended, a resend); its outcome colours it. */
interface InspectorLine {
  text: string;
  outcome: "delivered" | "failed" | "unchecked";
}

/** With `wh listen --forward-to`: what the app answered, or why it could not be reached (receiver.ts's ForwardResult is one). */
type InspectorForward = { url: string; status: number; durationMs: number } | { url: string; error: Untrusted; durationMs: number };

/**
 * What the inspector page shows of one request (`wh listen`) or accepted event (`wh serve`).
 * Everything in it came from outside: the page puts it on screen as text only.
 */
export interface InspectorEntry {
  id: number;
  kind: "request" | "event";
  receivedAt: string;
  method: string;
  path: string;
  type: string;
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
  resends: InspectorLine[];
  /** wh serve's: each attempt to deliver the event, and how its delivery ended if not delivered. */
  deliveries?: InspectorLine[];
}

/** The event stream's first frame: where requests came to, and whether the page may resend. */
export interface InspectorHello {
  origin: string;
  resend: boolean;
}

/** What the page posts to resend an entry: an empty URL means the one it came to. */
export interface InspectorResendBody {
  url: string;
  resign: boolean;
}

/** The answer to an action that failed. */
export interface InspectorFailure {
  error: string;
}

/** A value as JSON.parse gives it back from JSON.stringify: what has a toJSON (Untrusted) is what that returns. */
export type AsJson<T> = T extends { toJSON(): infer J } ? J : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;
