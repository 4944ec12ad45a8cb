import type { Destination } from "../config/resolve.js";
import type { SubscriptionRequest } from "../core/destination/route.js";

/**
 * Where one subscription request goes: its mapped URL, method and headers; signed with the
 * destination's secret over its signed text, and not signed when the mapping gave no data (as
 * the destination's extendRequest does).
 */
export function requestDestination(destination: Destination, request: SubscriptionRequest): Destination {
  return {
    ...destination,
    targets: [{ url: new URL(request.url), headers: request.headers }],
    method: request.method,
    sharedSecret: request.signedText === undefined ? undefined : destination.sharedSecret,
  };
}
