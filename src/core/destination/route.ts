import type { SegmentEngines } from "./engines.js";
import type { SendPayload } from "./send-action.js";
import type { PrepareResult } from "../message/prepare.js";
import type { Subscription, SubscriptionSet } from "./subscriptions.js";

/** What one matching subscription makes of one event: its mapped payload, or why it has none. */
export type Route =
  | { subscription: string; ok: true; payload: SendPayload; batchSize: number | undefined }
  | { subscription: string; ok: false; error: string };

/** One request of a subscription, as Segment's Send action makes it (perform, or performBatch). */
export interface SubscriptionRequest {
  subscription: string;
  url: string;
  method: SendPayload["method"];
  /** The mapped headers, as strings (the request client's Headers take each value's String()). */
  headers: Record<string, string>;
  /** The exact body: JSON of the mapped data, or of the batch's data array; "" when data mapped to nothing. */
  body: string;
  /** What X-Signature covers (the data, or the batch's first data); undefined: the request is not signed. */
  signedText: string | undefined;
  /** False when the data mapped to nothing: no body and no Content-Type (the request client's `json` was absent). */
  json: boolean;
  /** The indexes of the events it carries, in order. */
  events: number[];
}

/** The reason an event no enabled subscription's trigger matches is not sent. */
export const NO_SUBSCRIPTION_MATCHED = "matched no subscription";

/**
 * Each enabled subscription whose trigger matches the event, in the config's order, with the
 * event mapped by it (`only`: just these subscriptions, as a dead letter that names them).
 */
export async function routeEvent(subscriptions: readonly Subscription[], event: unknown, engines: SegmentEngines, only?: readonly string[]): Promise<Route[]> {
  const routes: Route[] = [];
  for (const subscription of subscriptions) {
    if (!subscription.enabled || (only !== undefined && !only.includes(subscription.name)) || !subscription.matches(event)) continue;
    const mapped = await engines.mapEvent(subscription.mapping, event);
    const problem = mapped.ok ? headerProblem(mapped.payload.headers) : mapped.error;
    routes.push(
      mapped.ok && problem === undefined
        ? { subscription: subscription.name, ok: true, payload: mapped.payload, batchSize: subscription.batchSize }
        : { subscription: subscription.name, ok: false, error: problem ?? "" },
    );
  }
  return routes;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A mapped header the request client's fetch refuses (its TypeError, which the Send action turns
 * into a PayloadValidationError: nothing is sent), said as node-fetch says it.
 */
function headerProblem(headers: Record<string, unknown> | undefined): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) return `${name} is not a legal HTTP header name`;
    if (!HEADER_VALUE.test(String(value).trim())) return `${String(value)} is not a legal HTTP header value`;
  }
  return undefined;
}

/**
 * The requests that events' routes make, in order: one per event for a subscription without
 * batching; with batching, Segment's pipeline groups the payloads by the values of their
 * batch_keys (url, method and headers by default) into requests of at most the batch size, and
 * performBatch sends the group with its first payload's url, method and headers.
 */
export function planRequests(routed: readonly (readonly Route[])[]): SubscriptionRequest[] {
  const requests: SubscriptionRequest[] = [];
  const open = new Map<string, { subscription: string; payloads: SendPayload[]; events: number[]; size: number }>();
  routed.forEach((routes, index) => {
    for (const route of routes) {
      if (!route.ok) continue;
      if (route.batchSize === undefined) {
        requests.push(requestOf(route.subscription, [route.payload], [index], false));
        continue;
      }
      const key = `${route.subscription}\u0000${batchKey(route.payload)}`;
      let group = open.get(key);
      if (group === undefined) {
        group = { subscription: route.subscription, payloads: [], events: [], size: route.batchSize };
        open.set(key, group);
      }
      group.payloads.push(route.payload);
      group.events.push(index);
      if (group.payloads.length >= group.size) {
        open.delete(key);
        requests.push(requestOf(group.subscription, group.payloads, group.events, true));
      }
    }
  });
  for (const group of open.values()) requests.push(requestOf(group.subscription, group.payloads, group.events, true));
  return requests;
}

/** The values of a payload's batch_keys: payloads with the same go in one request. */
function batchKey(payload: SendPayload): string {
  const keys = payload.batch_keys ?? [];
  return JSON.stringify(keys.map((key) => (payload as unknown as Record<string, unknown>)[key] ?? null));
}

/**
 * The request perform (one payload) or performBatch (an array of the data) makes, signed as the
 * destination's extendRequest signs: over the JSON of the (first) payload's data, when it has one.
 */
function requestOf(subscription: string, payloads: readonly SendPayload[], events: number[], batched: boolean): SubscriptionRequest {
  const first = payloads[0] as SendPayload;
  const json = batched || first.data !== undefined;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(first.headers ?? {})) {
    // A JSON body's Content-Type is the request client's, whatever the mapping says.
    if (!json || name.toLowerCase() !== "content-type") headers[name] = String(value).trim();
  }
  const body = batched ? JSON.stringify(payloads.map((payload) => payload.data ?? null)) : json ? JSON.stringify(first.data) : "";
  const signedText = first.data ? JSON.stringify(first.data) : undefined;
  return { subscription, url: first.url, method: first.method, headers, body, signedText, json, events };
}

/**
 * A prepared message routed to the subscriptions: each matching one with its mapped payload
 * (`routes`), skipped when none matches, invalid when every matching mapping fails (Segment's
 * reasons, naming each subscription). The mapping input is the event as Segment holds it: the
 * prepared actions-mode body.
 */
export async function routeMessage(result: PrepareResult, set: SubscriptionSet): Promise<PrepareResult> {
  if (!result.ok || !result.message.enabled) return result;
  const { message } = result;
  const routes = await routeEvent(set.subscriptions, JSON.parse(message.body), set.engines, message.only);
  if (routes.length === 0) return { ok: true, message: { ...message, enabled: false, skipKind: "unmatched", skipReason: NO_SUBSCRIPTION_MATCHED } };
  if (routes.every((route) => !route.ok)) return { ok: false, kind: "invalid-message", error: describeUnmapped(routes) };
  return { ok: true, message: { ...message, routes } };
}

/** `subscription "B": The root value is missing the required field 'url'.; …` for the routes whose mapping failed. */
export function describeUnmapped(routes: readonly Route[]): string {
  return routes.flatMap((route) => (route.ok ? [] : [`subscription ${JSON.stringify(route.subscription)}: ${route.error}`])).join("; ");
}
