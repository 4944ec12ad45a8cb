import { MAX_MESSAGE_BYTES } from "../message/rules.js";
import type { MessageType } from "../message/types.js";
import { findSample, sampleMessage } from "../samples/catalogue.js";

/**
 * The events `wh check` sends, as Segment-spec input: wh's own message code turns them into the
 * classic or Actions body, so the check sends exactly what `wh send` and `wh replay` would.
 */

const USER = "wh-check-user-1";

/** The catalogue's sample of each type (its track: Order Completed), sent as wh check's own user. */
function catalogued(name: string): Record<string, unknown> {
  const sample = findSample(name);
  if (sample === undefined) throw new Error(`the catalogue has no ${name}`);
  return { ...sampleMessage(sample), userId: USER };
}

/** One event of each of the seven types: the catalogue's, with the Spec's fields; delete has none there. */
export const TYPE_SAMPLES: Readonly<Record<MessageType, Record<string, unknown>>> = {
  page: catalogued("Page"),
  screen: catalogued("Screen"),
  identify: catalogued("Identify"),
  track: catalogued("Order Completed"),
  alias: catalogued("Alias"),
  group: catalogued("Group"),
  delete: { type: "delete", userId: USER },
};

/**
 * Text that serialises differently in other JSON encoders: accents, CJK, an emoji outside the
 * BMP, a URL and markup. `escapeLikeOtherEncoders` writes it as PHP and Go do.
 */
export const UNICODE_SAMPLE: Record<string, unknown> = {
  type: "track",
  userId: USER,
  event: "Crème Brûlée Ordered",
  properties: { dish: "crème brûlée", city: "東京", mood: "🎉", url: "https://example.com/menu/desserts?ref=a/b", note: "<b>Tom & Jerry</b>" },
};

/**
 * The same JSON text with the escapes other encoders write and JSON.stringify never does: `\/`
 * for every slash (PHP's json_encode), `\u003c` `\u003e` `\u0026` for < > & (Go's encoding/json)
 * and `\u00e9` for é. A slash, <, > or & can only stand inside a JSON string, so the value is the
 * same; only the bytes differ from what JSON.stringify of the parsed value gives back.
 */
export function escapeLikeOtherEncoders(json: string): string {
  return json.replace(/[/<>&é]/g, (char) => (char === "/" ? "\\/" : `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`));
}

/** A track whose classic body comes to just under the 32 KB limit: `pad` fills it up. */
export function largeSample(pad: number): Record<string, unknown> {
  const items = Array.from({ length: 40 }, (_, index) => ({ sku: `sku-${index}`, name: `Item ${index}`, price: index + 0.5, quantity: 1 }));
  return {
    type: "track",
    userId: USER,
    event: "Cart Viewed",
    properties: { items, notes: "x".repeat(Math.max(0, pad)) },
  };
}

/** How close to the limit the large event comes, in bytes. */
export const LARGE_EVENT_BYTES = MAX_MESSAGE_BYTES - 64;

/** A track as Segment holds it: version 2, a full context, and the fields Segment adds. */
export const FULL_CONTEXT_SAMPLE: Record<string, unknown> = {
  type: "track",
  version: 2,
  userId: USER,
  anonymousId: "wh-check-anonymous-1",
  event: "Product Viewed",
  properties: { productId: "p-42", price: 19.99, currency: "EUR" },
  context: {
    library: { name: "analytics.js", version: "next-1.70.0" },
    ip: "203.0.113.7",
    locale: "fr-FR",
    timezone: "Europe/Paris",
    userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    page: {
      path: "/p/42",
      referrer: "https://www.google.com/",
      search: "?utm_source=news",
      title: "Product 42",
      url: "https://example.com/p/42?utm_source=news",
    },
    campaign: { name: "spring", source: "news", medium: "email" },
    traits: { plan: "pro" },
  },
  integrations: { All: true },
  channel: "client",
  originalTimestamp: "2026-11-21T09:30:07.912Z",
  sentAt: "2026-11-21T09:30:08.001Z",
  receivedAt: "2026-11-21T09:30:08.276Z",
  timestamp: "2026-11-21T09:30:08.187Z",
  projectId: "wh-check-project",
  _metadata: { bundled: ["Segment.io"], unbundled: [], bundledIds: [] },
};
