import type { RecordedRequest } from "../helpers/recording-server.js";
import { basic, post, signedBodies } from "../cli/serve-helpers.js";

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
 * first arrivals, per-user order violations among them, and duplicates.
 */
export function tally(requests: RecordedRequest[]): () => { ids: Set<string>; violations: number; duplicates: number } {
  const ids = new Set<string>();
  const latest = new Map<string, number>();
  let violations = 0;
  let read = 0;
  return () => {
    for (const body of signedBodies(requests.slice(read))) {
      const id = body.messageId as string;
      if (ids.has(id)) continue;
      ids.add(id);
      const index = (body.properties as { index: number }).index;
      const user = body.userId as string;
      if (index < (latest.get(user) ?? -1)) violations += 1;
      latest.set(user, Math.max(index, latest.get(user) ?? -1));
    }
    read = requests.length;
    return { ids, violations, duplicates: read - ids.size };
  };
}
