import type { RecordedRequest } from "../helpers/recording-server.js";
import { Analytics } from "@segment/analytics-node";
import { basic, post, signedBodies } from "../cli/commands/serve-helpers.js";

/** Traffic for wh serve's Redis queue tests through outages and failovers, and what the receiver made of it. */

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Posts `count` events of `users` users, 20 a request, one request at a time (so each user's
 * events are accepted in order), to the processes in turn; a refused or failed request is sent
 * again as an SDK does. `acknowledged` gets the messageIds answered 200 as they are; `refused`,
 * those of each request answered otherwise (or not at all), with how many times: Redis may have
 * stored a request it was taking when it went away, so its events may be stored, and delivered, twice.
 */
export async function orderedProducer(
  urls: readonly string[],
  count: number,
  users: number,
  acknowledged: string[],
  refused = new Map<string, number>(),
): Promise<void> {
  for (let start = 0, turn = 0; start < count; start += 20, turn += 1) {
    const batch = Array.from({ length: 20 }, (_, offset) => ({
      type: "track",
      userId: `u-${(start + offset) % users}`,
      event: "Ordered",
      messageId: `m-${start + offset}`,
      properties: { index: start + offset },
    }));
    for (let attempt = 0; ; attempt += 1) {
      const url = urls[(turn + attempt) % urls.length] as string;
      const answer = await post(url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") }).catch(() => ({ status: 0 }));
      if (answer.status === 200) break;
      for (const { messageId } of batch) refused.set(messageId, (refused.get(messageId) ?? 0) + 1);
      await sleep(100);
    }
    acknowledged.push(...batch.map((event) => event.messageId));
  }
}

/**
 * What the receiver got, read incrementally (the check runs often, in the receiver's process):
 * first arrivals (each id with when it came), per-user order violations among them, and duplicates.
 */
export function tally(requests: RecordedRequest[]): () => { ids: Map<string, number>; violations: number; duplicates: number } {
  const ids = new Map<string, number>();
  const latest = new Map<string, number>();
  let violations = 0;
  let read = 0;
  return () => {
    const fresh = requests.slice(read);
    for (const [position, body] of signedBodies(fresh).entries()) {
      const id = body.messageId as string;
      if (ids.has(id)) continue;
      ids.set(id, (fresh[position] as RecordedRequest).at);
      const index = (body.properties as { index: number }).index;
      const user = body.userId as string;
      if (index < (latest.get(user) ?? -1)) violations += 1;
      latest.set(user, Math.max(index, latest.get(user) ?? -1));
    }
    read = requests.length;
    return { ids, violations, duplicates: read - ids.size };
  };
}

/** What a real SDK's traffic came to: its acknowledged messageIds, and the events it sent in requests not answered 200 (each may be stored again by a retry). */
export interface SdkTraffic {
  acknowledged: string[];
  /** How many events such requests held, and which. */
  resent: number;
  resentIds: Set<string>;
  /** Events the client gave up on (none while its retries last). */
  failed: number;
}

/**
 * `count` events of `users` users sent by real analytics-node clients, one per URL, each with its
 * own users (user u's goes to URL u mod the count), in batches of 50: a client sends its next
 * batch once the last one was answered (its retries included), so each user's events are accepted
 * in the order sent. What an in-flight batch is, and how it is retried (503 with backoff, a 10 s
 * timeout), is the SDK's own.
 */
export function sdkProducer(urls: readonly string[], count: number, users: number, prefix: string): { traffic: SdkTraffic; done: Promise<void> } {
  const traffic: SdkTraffic = { acknowledged: [], resent: 0, resentIds: new Set(), failed: 0 };
  const client = async (url: string, slot: number): Promise<void> => {
    const analytics = new Analytics({ writeKey: "wk", host: url, flushAt: 50, flushInterval: 20, maxRetries: 1_000 });
    // Each attempt's body (its sentAt differs from the last one's) until it is answered 2xx.
    const unanswered = new Map<string, string[]>();
    analytics.on("http_request", ({ body }) => {
      const batch = (JSON.parse(body as string) as { batch: { messageId: string }[] }).batch;
      unanswered.set(
        body as string,
        batch.map((event) => event.messageId),
      );
    });
    analytics.on("http_response", ({ status, body }) => {
      if (status >= 200 && status < 300) unanswered.delete(body as string);
    });
    const mine = Array.from({ length: count }, (_, index) => index).filter((index) => (index % users) % urls.length === slot);
    for (let start = 0; start < mine.length; start += 50) {
      await Promise.all(
        mine.slice(start, start + 50).map(
          (index) =>
            new Promise<void>((resolve) => {
              const messageId = `${prefix}-${index}`;
              analytics.track({ userId: `${prefix}-user-${index % users}`, event: "Ordered", messageId, properties: { index } }, (error) => {
                if (error === undefined) traffic.acknowledged.push(messageId);
                else traffic.failed += 1;
                resolve();
              });
            }),
        ),
      );
    }
    await analytics.closeAndFlush();
    for (const ids of unanswered.values()) {
      traffic.resent += ids.length;
      for (const id of ids) traffic.resentIds.add(id);
    }
  };
  return { traffic, done: Promise.all(urls.map(client)).then(() => undefined) };
}
