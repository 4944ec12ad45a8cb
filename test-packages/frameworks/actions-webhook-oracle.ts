import { createRequire } from "node:module";
import { createTestIntegration } from "@segment/actions-core";

/** The destination as its own CommonJS module exports it (`exports.default`). */
type WebhookModule = typeof import("@segment/action-destinations/dist/destinations/webhook/index.js");
const webhook = (createRequire(import.meta.url)("@segment/action-destinations/dist/destinations/webhook/index.js") as WebhookModule).default;

/**
 * Segment's own Webhooks (Actions) destination (action-destinations destinations/webhook) run by
 * actions-core's createTestIntegration: the request client Segment delivers with (cross-fetch,
 * `user-agent: Segment (Actions)`, its redirects) posting to a real URL. What it sends is the
 * capture wh's actions mode is held to.
 */
export async function sendLikeSegment(url: string, event: Record<string, unknown>, sharedSecret?: string, headers?: Record<string, string>): Promise<void> {
  const integration = createTestIntegration(webhook);
  await integration.testAction("send", {
    event,
    settings: sharedSecret === undefined ? {} : { sharedSecret },
    // The Send action's defaults, as a new subscription has them (webhook/send/index.ts).
    mapping: { url, method: "POST", data: { "@path": "$." }, ...(headers === undefined ? {} : { headers }) },
  });
}
