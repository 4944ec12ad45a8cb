import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { hmacHex, ROOT } from "../helpers/run-wh.js";
import { closedAfterEach } from "../helpers/recording-server.js";
import { chromiumAvailable as available, post, startWithUi, chromiumForTheFile, openLive } from "./browser-helpers.js";

// The pictures of the inspector in docs/listen.md (docs/inspector.png, docs/inspector-serve.png), taken
// again only with WH_SCREENSHOT=1: a test run leaves the checkout as it was.

const SECRET = "inspector-secret";
const receiver = closedAfterEach();
let browser: Browser;

chromiumForTheFile((launched) => {
  browser = launched;
});

const open = (url: string): Promise<Page> => openLive(browser, url);
const rows = (page: Page) => page.locator("[data-testid=rows] [data-testid=row]");

async function save(page: Page, name: string): Promise<void> {
  mkdirSync(join(ROOT, "docs"), { recursive: true });
  await page.screenshot({ path: join(ROOT, "docs", name) });
}

const event = (type: string, fields: Record<string, unknown>) =>
  JSON.stringify({ version: 1, type, messageId: `m-${Math.random().toString(36).slice(2, 10)}`, timestamp: new Date().toISOString(), ...fields });

describe.skipIf(!available || process.env.WH_SCREENSHOT !== "1")("the inspector's pictures (WH_SCREENSHOT=1)", () => {
  it("wh listen --ui: valid, invalid, unsigned and batch requests, one open", async () => {
    const { listening, inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const page = await open(inspector);
    const order = event("track", { userId: "user-42", event: "Order Completed", properties: { orderId: "o-1001", revenue: 59.9, currency: "EUR" } });
    const cart = event("track", { userId: "user-8", event: "Cart Viewed" });
    // Each body and its X-Signature: signed, forged, none, a batch signed over its first event.
    const requests: [string, string | undefined][] = [
      [event("identify", { userId: "user-42", traits: { plan: "pro", email: "ada@example.com" } }), undefined],
      [event("track", { userId: "user-42", event: "Product Viewed", properties: { sku: "sku-7" } }), undefined],
      [event("page", { userId: "user-17", name: "Pricing" }), undefined],
      [event("track", { userId: "user-17", event: "Signed Up" }), "0".repeat(64)],
      [`[${cart},${event("track", { userId: "user-8", event: "Cart Emptied" })}]`, hmacHex(SECRET, cart)],
      [order, undefined],
      [event("track", { userId: "user-3", event: "Coupon Applied" }), ""],
      [event("track", { userId: "user-9", event: "Checkout Started" }), undefined],
    ];
    for (const [body, signature = hmacHex(SECRET, body)] of requests)
      await post(`${listening}webhooks/segment`, body, signature === "" ? {} : { "x-signature": signature });
    await expect.poll(() => rows(page).count()).toBe(requests.length);
    await rows(page).nth(2).click();
    await save(page, "inspector.png");
  });

  it("wh serve --ui: delivered, retrying and failed deliveries, a failing one open", async () => {
    const hook = await receiver({
      replies: (request) => (request.body.includes("Refund") ? { status: 500, headers: { "retry-after": "30" }, body: "database is down" } : 200),
    });
    const { listening: api, inspector } = await startWithUi(["serve", "--port", "0", "--url", hook.url], SECRET);
    const page = await open(inspector);
    const authorization = `Basic ${Buffer.from("wk:").toString("base64")}`;
    const calls: [string, Record<string, unknown>][] = [
      ["identify", { userId: "user-42", traits: { plan: "pro" } }],
      ["track", { userId: "user-42", event: "Order Completed", properties: { revenue: 59.9 } }],
      ["track", { userId: "user-42", event: "Refund Requested", properties: { orderId: "o-1001" } }],
      ["page", { userId: "user-17", name: "Pricing" }],
      ["track", { userId: "user-17", event: "Signed Up" }],
    ];
    for (const [type, fields] of calls) expect(await post(`${api}/v1/${type}`, JSON.stringify(fields), { authorization })).toBe(200);
    await expect.poll(() => page.locator("[data-testid=rows] .delivery.retrying").count()).toBe(1);
    await page.locator("[data-testid=rows] .delivery.retrying").click();
    await save(page, "inspector-serve.png");
  });
});
