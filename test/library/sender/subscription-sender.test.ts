import { describe, expect, it } from "vitest";
import { createWebhookSender, signBody, UsageError } from "../../../src/index.js";
import { closedAfterEach } from "../../helpers/recording-server.js";

// createWebhookSender with a destination's subscriptions: what wh send does with them, as a call.

const server = closedAfterEach();
const SECRET = "library-secret";

const subscriptions = (url: string) => [
  { name: "Tracks", actionSlug: "send" as const, enabled: true, trigger: 'type = "track"', settings: { url: `${url}/a`, data: { "@path": "$.properties" } } },
  {
    name: "Orders",
    actionSlug: "send" as const,
    enabled: true,
    trigger: 'event = "Order Completed"',
    settings: { url: `${url}/c`, method: "PATCH", headers: { "X-Id": { "@path": "$.properties.id" } }, data: { id: { "@path": "$.properties.id" } } },
  },
];

describe("createWebhookSender with subscriptions", () => {
  it("sends a message to each subscription its trigger matches, mapped and signed, and reports each", async () => {
    const receiver = await server();
    const sender = await createWebhookSender({ subscriptions: subscriptions(receiver.url), sharedSecret: SECRET, maxAttempts: 1 });
    try {
      const report = await sender.send({ type: "track", userId: "u1", event: "Order Completed", properties: { id: "o1" } });
      expect(report.outcome).toBe("delivered");
      expect(report.subscriptions?.map((delivery) => [delivery.subscription, delivery.outcome, delivery.method, delivery.body])).toEqual([
        ["Tracks", "delivered", "POST", '{"id":"o1"}'],
        ["Orders", "delivered", "PATCH", '{"id":"o1"}'],
      ]);
      const patch = receiver.requests.find((request) => request.method === "PATCH");
      expect(patch?.headers["x-id"]).toBe("o1");
      expect(patch?.headers["x-signature"]).toBe(signBody(SECRET, '{"id":"o1"}'));
      const none = await sender.send({ type: "identify", userId: "u1" });
      expect(none).toMatchObject({ outcome: "skipped", skipReason: "matched no subscription", subscriptions: [] });
    } finally {
      await sender.close();
    }
  });

  it("reports a failing subscription by name, the others delivered", async () => {
    const receiver = await server({ replies: (request) => (request.path.endsWith("/c") ? 400 : 200) });
    const sender = await createWebhookSender({ subscriptions: { data: { subscriptions: subscriptions(receiver.url) } }, maxAttempts: 1 });
    try {
      const report = await sender.send({ type: "track", userId: "u1", event: "Order Completed", properties: { id: "o1" } });
      expect(report.outcome).toBe("failed");
      expect(report.subscriptions?.map((delivery) => [delivery.subscription, delivery.outcome])).toEqual([
        ["Tracks", "delivered"],
        ["Orders", "failed"],
      ]);
    } finally {
      await sender.close();
    }
  });

  it("refuses a bad trigger naming the subscription, and webhooks beside subscriptions", async () => {
    const bad = [{ ...subscriptions("http://127.0.0.1:9")[0], trigger: "typo" }] as ReturnType<typeof subscriptions>;
    await expect(createWebhookSender({ subscriptions: bad })).rejects.toThrow(UsageError);
    await expect(createWebhookSender({ subscriptions: bad })).rejects.toThrow('subscriptions[0] ("Tracks").trigger');
    await expect(createWebhookSender({ subscriptions: subscriptions("http://127.0.0.1:9"), webhooks: "http://127.0.0.1:9" })).rejects.toThrow(UsageError);
  });
});
