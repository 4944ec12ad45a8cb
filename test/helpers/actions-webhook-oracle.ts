import { createTestIntegration } from "@segment/actions-core";
import webhook from "@segment/action-destinations/dist/destinations/webhook/index.js";

/**
 * Segment's own Webhooks (Actions) destination (action-destinations destinations/webhook) run by
 * actions-core's createTestIntegration: the request client Segment delivers with (cross-fetch,
 * `user-agent: Segment (Actions)`, its redirects) posting to a real URL. What it sends is the
 * capture wh's actions mode is held to.
 */
export async function sendLikeSegment(url: string, event: Record<string, unknown>, sharedSecret?: string): Promise<void> {
  const integration = createTestIntegration(webhook);
  await integration.testAction("send", {
    event,
    settings: sharedSecret === undefined ? {} : { sharedSecret },
    // The Send action's defaults, as a new subscription has them (webhook/send/index.ts).
    mapping: { url, method: "POST", data: { "@path": "$." } },
  });
}
