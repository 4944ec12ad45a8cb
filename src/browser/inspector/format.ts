import type { InspectorVerdict } from "../../adapters/inspector/protocol.js";
import type { Entry } from "./api.js";

// How the list and the detail put an entry's fields into words.

/** How the list and the filter name a verdict. */
export const VERDICT_TEXT: Record<InspectorVerdict, string> = {
  valid: "valid",
  "valid-batch": "valid (batch)",
  invalid: "invalid",
  missing: "unsigned",
  unchecked: "not checked",
  accepted: "accepted",
  rejected: "rejected",
};

const two = (n: number): string => String(n).padStart(2, "0");

/** Local day and time to the second (`Nov 22 10:00:01`): a capture holds yesterday's requests too. */
export function dayAndTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${clock(d)}`;
}

/** Local date and time in full (`2026-11-22 10:00:01`): the row's title, the detail's line. */
export function dateTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${clock(d)}`;
}

function clock(d: Date): string {
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** The duration column: the app's answer (wh listen --forward-to) or the last delivery attempt (wh serve). */
export function duration(entry: Entry): string {
  return entry.durationMs === undefined ? "" : `${entry.durationMs} ms`;
}

export interface DeliveryShown {
  /** The list's cell. */
  text: string;
  /** All of it: the cell's title and the detail's line. */
  full: string;
  /** Its colour (page.html's classes). */
  className: string;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Where a wh serve event's delivery stands, in words; undefined for wh listen's requests (and serve's rejected events). */
export function deliveryShown(entry: Entry): DeliveryShown | undefined {
  const delivery = entry.delivery;
  switch (delivery?.state) {
    case undefined:
      return undefined;
    case "pending":
      return { text: "pending", full: "pending: not attempted yet", className: "unchecked" };
    case "delivered": {
      const text = `delivered ${delivery.status}`;
      return { text, full: `${text} after ${plural(delivery.attempts, "attempt")}`, className: "delivered" };
    }
    case "retrying": {
      const next = clock(new Date(delivery.nextAttemptAt));
      return {
        text: `retrying at ${next}`,
        full: `retrying: ${plural(delivery.attempts, "attempt")}, the last answered ${delivery.lastAnswer}; next attempt at ${next}`,
        className: "retrying",
      };
    }
    case "failed":
      return { text: "failed", full: `failed after ${plural(delivery.attempts, "attempt")}: ${delivery.reason}`, className: "failed" };
  }
}
