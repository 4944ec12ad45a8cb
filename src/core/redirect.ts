import type { AttemptOutcome } from "./retry-policy.js";

/**
 * Redirects as Segment's Actions destinations follow them. actions-core's request client fetches
 * with cross-fetch, which on Node is node-fetch 2 (actions-core fetch.ts; node-fetch 2.7
 * lib/index.js, "HTTP-redirect fetch"), in its default `redirect: 'follow'` with `follow: 20`:
 * - 301, 302, 303, 307 and 308 with a Location are followed, at most 20 times;
 * - 303, and 301 or 302 after a POST, become a GET without a body; otherwise the method and the
 *   very body bytes go again (so the X-Signature still matches them);
 * - to another host (that is not a subdomain of this one) or another protocol, Authorization,
 *   WWW-Authenticate, Cookie and Cookie2 are not sent on.
 * A Location that is not an http(s) URL is not followed: the 3xx is the answer.
 */
export const MAX_REDIRECTS = 20;

export type RedirectMethod = "GET" | "POST" | "PUT" | "PATCH";

export interface RedirectableRequest {
  url: URL;
  method: RedirectMethod;
  headers: Record<string, string>;
  body: string | Uint8Array;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = new Set(["authorization", "www-authenticate", "cookie", "cookie2"]);

/** The request a redirect answer asks for next, or undefined when the answer is not one to follow. */
export function redirectedRequest(request: RedirectableRequest, outcome: AttemptOutcome): RedirectableRequest | undefined {
  if (outcome.kind !== "response" || !REDIRECT_STATUSES.has(outcome.status) || outcome.location === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(outcome.location, request.url);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const sameSite = url.protocol === request.url.protocol && isDomainOrSubdomain(url.hostname, request.url.hostname);
  const headers = sameSite ? request.headers : withoutCredentials(request.headers);
  const toGet = outcome.status === 303 || ((outcome.status === 301 || outcome.status === 302) && request.method === "POST");
  return toGet ? { url, method: "GET", headers, body: "" } : { url, method: request.method, headers, body: request.body };
}

/** node-fetch's test: the same host, or a subdomain of the one redirected from. */
function isDomainOrSubdomain(next: string, previous: string): boolean {
  return next === previous || next.endsWith(`.${previous}`);
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())));
}
