import { UsageError } from "./errors.js";
import type { SegmentEngines } from "./destination/engines.js";

/** A compiled FQL condition on one event. */
export type EventMatch = (event: unknown) => boolean;

/** Where `wh listen --route 'FQL => URL'` sends the requests whose event matches. */
export interface ListenRoute {
  fql: string;
  matches: EventMatch;
  url: string;
}

/** What `wh listen` lets through and where it forwards it (--filter, --route, --forward-to). */
export interface ListenRouting {
  /** Only requests whose event matches are printed, shown and forwarded; the others are answered and captured. */
  filter?: EventMatch | undefined;
  /** Tried in order: the first whose condition the event matches. */
  routes: readonly ListenRoute[];
  /** Where the requests that match no route go; without it, with routes, they are not forwarded. */
  forwardTo?: string | undefined;
}

/** What happens to a request under a routing: filtered out, forwarded to a URL, or neither (no route matched). */
export type RouteDecision = { kind: "filtered" } | { kind: "forward"; url: string } | { kind: "unrouted" } | { kind: "answer" };

const FQL_HINT = 'an FQL condition reads like: type = "track" and event = "Order Completed"';
const EXAMPLE = `such as 'type = "identify" => http://localhost:4000/users'`;

/** An http(s) URL, or a UsageError naming the flag. */
export function requireHttpUrl(url: string, flag: string): string {
  if (!/^https?:\/\/[^/]/.test(url))
    throw new UsageError(`${flag} ${JSON.stringify(url)}: expected an http or https URL, such as http://localhost:3000/webhooks`);
  return url;
}

/**
 * Reads `FQL => URL`. A URL holds no whitespace, so the last word is the URL and the `=>` before
 * it the separator, whatever the condition's strings hold (`event = "a => b"`).
 */
export function parseRoute(text: string): { fql: string; url: string } {
  const match = /^(.*?)\s*=>\s*(\S+)\s*$/s.exec(text);
  const fql = match?.[1]?.trim() ?? "";
  if (match === null || fql === "") throw new UsageError(`--route ${JSON.stringify(text)}: expected 'FQL => URL', ${EXAMPLE}`);
  return { fql, url: requireHttpUrl(match[2] as string, "--route") };
}

/** Compiles --filter and each --route's condition with Segment's FQL engine; FQL's own message when one is not valid. */
export function compileRouting(
  flags: { filter?: string | undefined; routes: readonly string[]; forwardTo?: string | undefined },
  fql: Pick<SegmentEngines, "compileTrigger">,
): ListenRouting {
  const compile = (text: string, flag: string): EventMatch => {
    const compiled = fql.compileTrigger(text);
    if (!compiled.ok) throw new UsageError(`${flag}: not valid FQL (${compiled.error}): ${JSON.stringify(text)}`, { hint: FQL_HINT });
    return compiled.matches;
  };
  return {
    filter: flags.filter === undefined ? undefined : compile(flags.filter, "--filter"),
    routes: flags.routes.map((text) => {
      const { fql: condition, url } = parseRoute(text);
      return { fql: condition, url, matches: compile(condition, "--route") };
    }),
    forwardTo: flags.forwardTo,
  };
}

/** Whether a request's body matches: an event that does, or a batch (a JSON array) with one event that does. */
function bodyMatches(json: unknown, matches: EventMatch): boolean {
  return Array.isArray(json) ? json.some((event) => matches(event)) : matches(json);
}

/**
 * What a request whose parsed body is `json` (undefined: not JSON) gets. A request is never cut
 * in two: its signature covers all its bytes, so a batch goes whole to the first route one of its
 * events matches. A body that is not JSON holds no event to judge: it is let through.
 */
export function decideRoute(routing: ListenRouting, json: unknown): RouteDecision {
  if (json === undefined) return routing.forwardTo === undefined ? { kind: "answer" } : { kind: "forward", url: routing.forwardTo };
  if (routing.filter !== undefined && !bodyMatches(json, routing.filter)) return { kind: "filtered" };
  const url = routing.routes.find((route) => bodyMatches(json, route.matches))?.url ?? routing.forwardTo;
  if (url !== undefined) return { kind: "forward", url };
  return routing.routes.length > 0 ? { kind: "unrouted" } : { kind: "answer" };
}
