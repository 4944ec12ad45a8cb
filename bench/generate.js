import { createWriteStream } from "node:fs";
import { once } from "node:events";

/**
 * Writes `count` Segment-spec track events as NDJSON, spread over `users` users, each line about
 * the size of a typical event. Returns the size in bytes of one outbound body, for autocannon.
 */
export async function generateEvents(path, count, users = 10_000) {
  const out = createWriteStream(path);
  for (let index = 0; index < count; index += 1) {
    const line = JSON.stringify({
      type: "track",
      userId: `user-${index % users}`,
      event: "Order Completed",
      properties: { orderId: `o-${index}`, total: (index % 997) + 0.5, currency: "EUR", items: index % 7 },
      context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } },
      timestamp: "2026-11-21T09:30:08.276Z",
      messageId: `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`,
    });
    if (!out.write(`${line}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

/** The outbound body wh sends for a line of generateEvents, to size autocannon's body alike. */
export function sampleBody() {
  return JSON.stringify({
    version: 1,
    type: "track",
    userId: "user-1234",
    event: "Order Completed",
    properties: { orderId: "o-12345", total: 381.5, currency: "EUR", items: 4 },
    context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } },
    messageId: "00000000-0000-4000-8000-000000012345",
    timestamp: "2026-11-21T09:30:08.276Z",
  });
}
