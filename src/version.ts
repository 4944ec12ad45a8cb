import type { DestinationMode } from "./core/message/prepare.js";

/** The package version; a test keeps it equal to package.json's. */
export const VERSION = "0.1.0";

/** The fixed product token every request carries. */
export const USER_AGENT = `wh/${VERSION}`;

/**
 * The User-Agent of a webhook request. Actions mode sends what Segment's Actions destinations
 * send: actions-core's request client sets `user-agent: Segment (Actions)` on every request
 * (actions-core create-request-client.ts, baseClient). The classic destination's own token is
 * not published (the seed says only "a fixed product token of the sending service"), so classic
 * mode says it is wh.
 */
export function destinationUserAgent(mode: DestinationMode): string {
  return mode === "actions" ? "Segment (Actions)" : USER_AGENT;
}
