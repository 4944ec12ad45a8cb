import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRecordingServer } from "../helpers/recording-server.js";
import { installPacked, type PackedPackage } from "./packed-package.js";

// Code written for @segment/analytics-node, with only its import changed, type-checks strictly
// against the packed wh (an identify without userId or anonymousId a compile error, as there) and
// runs against a real receiver on 127.0.0.1. The same text type-checks against analytics-node
// itself: it is that library's code, not wh's. Needs `npm run build` first.

let packed: PackedPackage;
beforeAll(async () => {
  packed = await installPacked(["@segment/analytics-node"]);
});
afterAll(async () => {
  await packed?.remove();
});

const written = (from: string) => `import { Analytics } from "${from}";

const analytics = new Analytics({
  writeKey: process.env.SEGMENT_WRITE_KEY ?? "",
  host: process.env.SEGMENT_HOST,
  path: "/v1/batch",
  flushAt: 3,
  flushInterval: 1_000,
  maxRetries: 2,
  httpRequestTimeout: 5_000,
});

analytics.on("error", (err) => console.error("analytics failed:", err.code));

analytics.identify({ userId: "user-42", traits: { name: "Ada Lovelace", email: "ada@example.com", plan: "pro" } });
analytics.track(
  { userId: "user-42", event: "Order Completed", properties: { revenue: 42.5, currency: "EUR" }, timestamp: new Date() },
  (err) => {
    if (err) console.error("the order was not sent", err);
    else console.log("order sent");
  },
);
analytics.page({ anonymousId: "anon-7", category: "Docs", name: "Quickstart", properties: { url: "https://example.com/docs" } });
analytics.screen({ userId: "user-42", name: "Checkout", context: { app: { version: "2.1" } } });
analytics.group({ userId: "user-42", groupId: "acme", traits: { name: "Acme Inc", employees: 120 } });
analytics.alias({ userId: "user-42", previousId: "anon-7" });

// @ts-expect-error: identify needs a userId or an anonymousId
const unidentified = () => analytics.identify({ traits: { name: "nobody" } });
void unidentified;

await analytics.closeAndFlush({ timeout: 5_000 });
`;

describe("a file written for @segment/analytics-node", () => {
  it("type-checks against wh in strict mode and runs against a real receiver", async () => {
    const receiver = await startRecordingServer();
    try {
      const project = await packed.project("analytics-node-habits", { type: "module", files: { "app.ts": written("wh") } });
      project.compile();
      const output = await project.run("app.js", { SEGMENT_WRITE_KEY: "wk_habits", SEGMENT_HOST: `http://127.0.0.1:${receiver.port}` });

      expect(output).toBe("order sent\n");
      const batches = receiver.requests.map((request) => JSON.parse(request.body.toString()) as { batch: { type: string; userId?: string; event?: string }[] });
      expect(receiver.requests.map((request) => [request.path, request.headers.authorization])).toEqual([
        ["/v1/batch", `Basic ${Buffer.from("wk_habits:").toString("base64")}`],
        ["/v1/batch", `Basic ${Buffer.from("wk_habits:").toString("base64")}`],
      ]);
      expect(batches.flatMap((body) => body.batch.map((message) => message.type))).toEqual(["identify", "track", "page", "screen", "group", "alias"]);
    } finally {
      await receiver.close();
    }
  });

  it("is analytics-node's code: the same text type-checks against @segment/analytics-node", async () => {
    // Its own declarations need DOM types: as its users' projects, the check skips library files.
    const project = await packed.project("analytics-node-itself", {
      type: "module",
      skipLibCheck: true,
      files: { "app.ts": written("@segment/analytics-node") },
    });
    expect(() => project.compile()).not.toThrow();
  });
});
