import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import { loadSegmentEngines } from "../../../src/adapters/segment-engines.js";
import type { RecordedRequest, RecordingServer, Reply } from "../../helpers/recording-server.js";
import { hmacHex, makeTempDir } from "../../helpers/run-wh.js";
import { eventually, SECRET, sdk } from "./serve-helpers.js";

// wh serve with subscriptions, on the spool (test/cli/commands/serve-subscriptions.test.ts) and on Redis
// (test/redis/serve-redis-subscriptions.test.ts): a real analytics-node client sends 300 events of
// 30 users; three subscriptions take what their triggers match, each to its own path.

export const EVENTS = 300;
const USERS = 30;

const subscription = (name: string, trigger: string, settings: Record<string, unknown>) => ({ name, actionSlug: "send", enabled: true, trigger, settings });

/** The mapping of "Orders": what the receiver gets is checked against Segment's own mapping of it. */
const ORDERS_MAPPING = { data: { "@path": "$.properties" }, headers: { "X-User": { "@path": "$.userId" } } };

/** Tracks: the whole event; People: a hand-made body; Orders: PUT, batches of up to 5 per user (its X-User header keys the batches). */
function subscriptions(receiver: RecordingServer): Record<string, unknown>[] {
  return [
    subscription("Tracks", 'type = "track"', { url: `${receiver.url}/a` }),
    subscription("People", 'type = "identify" or type = "page"', {
      url: `${receiver.url}/b`,
      data: { id: { "@path": "$.messageId" }, user: { "@path": "$.userId" }, kind: { "@path": "$.type" }, seq: { "@path": "$.context.seq" } },
    }),
    subscription("Orders", 'event = "Order Completed"', { url: `${receiver.url}/c`, method: "PUT", enable_batching: true, batch_size: 5, ...ORDERS_MAPPING }),
  ];
}

/** A directory whose config has the three subscriptions. */
export async function subscriptionsDir(receiver: RecordingServer): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sharedSecret: SECRET, subscriptions: subscriptions(receiver) }));
  return dir;
}

/** Event i: user i % 30; track (every fifth an Order Completed), identify, page, or group (which no trigger matches). */
function kindOf(index: number): "track" | "order" | "identify" | "page" | "group" {
  return (["order", "track", "identify", "page", "group"] as const)[index % 5] as "track" | "order" | "identify" | "page" | "group";
}

/** The receiver's replies: a page's first request to People is answered 500, so it is retried there alone. */
export function replies(request: RecordedRequest): Reply {
  if (!request.path.endsWith("/b")) return { status: 200, delayMs: Math.floor(Math.random() * 3) };
  const body = JSON.parse(request.body.toString()) as { id: string; kind: string };
  if (body.kind !== "page" || failedOnce.has(body.id)) return 200;
  failedOnce.add(body.id);
  refused.add(request);
  return 500;
}
const failedOnce = new Set<string>();
const refused = new Set<RecordedRequest>();

/** Sends the 300 events through a real analytics-node client pointed at wh serve. */
export async function sendEvents(url: string): Promise<void> {
  const analytics = sdk(url, "wk-subs", 25);
  for (let index = 0; index < EVENTS; index += 1) {
    const base = { userId: `u${index % USERS}`, messageId: `m-${index}`, context: { seq: index } };
    const kind = kindOf(index);
    if (kind === "order" || kind === "track")
      analytics.track({ ...base, event: kind === "order" ? "Order Completed" : "Viewed", properties: { seq: index, total: index / 2 } });
    else if (kind === "identify") analytics.identify({ ...base, traits: { seq: index } });
    else if (kind === "page") analytics.page({ ...base, name: "Home" });
    else analytics.group({ ...base, groupId: "g1" });
  }
  await analytics.closeAndFlush({ timeout: 20_000 });
}

/** The requests each path answered 2xx (a request answered 500 was not delivered: it is retried). */
function delivered(receiver: RecordingServer, path: string): RecordedRequest[] {
  return receiver.requests.filter((request) => request.path === `/hook${path}` && !refused.has(request));
}

const indexOf = (messageId: string): number => Number(messageId.slice(2));
const expectedAt = (kinds: readonly string[]): number[] => Array.from({ length: EVENTS }, (_, index) => index).filter((index) => kinds.includes(kindOf(index)));

/** Each user's events, as their indexes in the order they arrived. */
function inArrivalOrder(indexes: readonly { user: string; index: number }[]): Map<string, number[]> {
  const byUser = new Map<string, number[]>();
  for (const { user, index } of indexes) byUser.set(user, [...(byUser.get(user) ?? []), index]);
  return byUser;
}
function expectEachUserInOrder(byUser: Map<string, number[]>, path: string): void {
  for (const [user, indexes] of byUser) expect(indexes, `${user} at ${path}`).toEqual([...indexes].sort((a, b) => a - b));
}

/**
 * Waits for every delivery, then holds: each event once at each path its triggers match and
 * nowhere else, each user's events in order at each path, each body as its subscription maps the
 * event (Orders' by Segment's own mapping of the whole event Tracks got), each signature valid.
 */
export async function expectRoutedDeliveries(receiver: RecordingServer): Promise<void> {
  const count = (path: string, perRequest: (request: RecordedRequest) => number) =>
    delivered(receiver, path).reduce((sum, request) => sum + perRequest(request), 0);
  const tracks = expectedAt(["order", "track"]);
  const people = expectedAt(["identify", "page"]);
  const orders = expectedAt(["order"]);
  await eventually(
    () =>
      count("/a", () => 1) >= tracks.length &&
      count("/b", () => 1) >= people.length &&
      count("/c", (request) => JSON.parse(request.body.toString()).length) >= orders.length,
    "every delivery",
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(receiver.requests.every((request) => ["/hook/a", "/hook/b", "/hook/c"].includes(request.path))).toBe(true);

  // Tracks: the whole event, as Segment holds it, signed over the body.
  const a = delivered(receiver, "/a").map((request) => {
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
    return JSON.parse(request.body.toString()) as Record<string, unknown>;
  });
  expect(a.map((event) => indexOf(event.messageId as string)).sort((x, y) => x - y)).toEqual(tracks);
  expectEachUserInOrder(inArrivalOrder(a.map((event) => ({ user: event.userId as string, index: indexOf(event.messageId as string) }))), "/a");
  const wholeEvent = new Map(a.map((event) => [event.messageId as string, event]));

  // People: the hand-made body, the page's retry delivered once.
  const b = delivered(receiver, "/b").map((request) => {
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
    return JSON.parse(request.body.toString()) as { id: string; user: string; kind: string; seq: number };
  });
  expect(b.map((body) => indexOf(body.id)).sort((x, y) => x - y)).toEqual(people);
  for (const body of b) expect(body).toEqual({ id: body.id, user: `u${indexOf(body.id) % USERS}`, kind: kindOf(indexOf(body.id)), seq: indexOf(body.id) });
  expectEachUserInOrder(inArrivalOrder(b.map((body) => ({ user: body.user, index: body.seq }))), "/b");

  // Orders: PUT batches of one user's events, each element Segment's mapping of the event, signed over the first.
  const engines = loadSegmentEngines();
  const c: { user: string; index: number }[] = [];
  for (const request of delivered(receiver, "/c")) {
    const batch = JSON.parse(request.body.toString()) as { seq: number }[];
    const user = request.headers["x-user"] as string;
    expect(request.method).toBe("PUT");
    expect(batch.length).toBeLessThanOrEqual(5);
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, JSON.stringify(batch[0])));
    for (const element of batch) {
      const mapped = await engines.mapEvent({ url: "http://x/", method: "PUT", ...ORDERS_MAPPING }, wholeEvent.get(`m-${element.seq}`));
      expect(mapped.ok && mapped.payload.data).toEqual(element);
      expect(`u${element.seq % USERS}`).toBe(user);
      c.push({ user, index: element.seq });
    }
  }
  expect(c.map((each) => each.index).sort((x, y) => x - y)).toEqual(orders);
  expectEachUserInOrder(inArrivalOrder(c), "/c");
}

/** /metrics: the groups, which no trigger matches, ended skipped; the others delivered. */
export async function expectSkippedGroups(url: string): Promise<void> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  expect(metrics).toContain(`wh_serve_events_total{outcome="skipped",skip="unmatched"} ${expectedAt(["group"]).length}`);
  expect(metrics).toContain(`wh_serve_events_total{outcome="delivered"} ${EVENTS - expectedAt(["group"]).length}`);
}

/** A subscription of every track event to `url`, as Segment's Public API returns one. */
export function trackSubscription(name: string, url: string): Record<string, unknown> {
  return { name, actionSlug: "send", enabled: true, trigger: 'type = "track"', settings: { url } };
}
