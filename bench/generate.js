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

/**
 * A batch as an app's Segment SDK posts it to wh serve: `size` track events of about 0.9 KB each
 * (an order with two products; analytics.js's context), ten users with ten events each. Every
 * messageId and userId holds `id`, so batches of different ids hold no duplicates.
 */
export function trackingBatch(size, id) {
  const now = new Date().toISOString();
  const batch = Array.from({ length: size }, (_, index) => ({
    type: "track",
    event: "Order Completed",
    userId: `user-${id}-${index % 10}`,
    anonymousId: "a3c8e1f2-5b7d-4e9a-8c6f-1d2e3f4a5b6c",
    messageId: `ajs-next-${id}-${index}`,
    timestamp: now,
    properties: {
      orderId: `o-${index}`,
      total: 25.5,
      revenue: 22,
      currency: "EUR",
      products: [
        { product_id: "507f1f77bcf86cd799439011", sku: "45790-32", name: "Monopoly: 3rd Edition", price: 19, quantity: 1, category: "Games" },
        { product_id: "505bd76785ebb509fc183733", sku: "46493-32", name: "Uno Card Game", price: 3, quantity: 2, category: "Games" },
      ],
    },
    context: {
      ip: "203.0.113.7",
      library: { name: "analytics.js", version: "next-1.70.0" },
      locale: "en-US",
      page: { path: "/checkout", referrer: "https://shop.example.com/cart", search: "", title: "Checkout", url: "https://shop.example.com/checkout" },
      userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
      timezone: "Europe/Amsterdam",
    },
  }));
  return { batch, sentAt: now };
}

/**
 * autocannon's `requests` for posting trackingBatch(size) with an id of its own in every request,
 * so wh serve never drops an event as a duplicate. The body is cut once where the id goes and
 * joined around a counter per request: autocannon's own idReplacement rebuilds each request with a
 * regular expression, which spent 0.2 of a core at 65,000 events/s on this 2-core machine.
 */
export function uniqueBatchRequests(size) {
  const parts = JSON.stringify(trackingBatch(size, "@id@")).split("@id@");
  let requests = 0;
  const setupRequest = (request) => {
    requests += 1;
    request.body = parts.join(`r${requests.toString(36)}`);
    return request;
  };
  return [{ method: "POST", setupRequest }];
}
