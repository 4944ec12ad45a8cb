import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { hmacHex } from "../helpers/run-wh.js";
import { closedAfterEach } from "../helpers/recording-server.js";
import { chromiumAvailable as available, chromiumForTheFile, openLive, post, startWithUi } from "./browser-helpers.js";

// The inspector's columns on a laptop's screen (1280×800): a typical event name, user, verdict,
// answer and delivery are shown whole, not cut with an ellipsis (the row's title has it all, but
// a person reads the list).

const SECRET = "inspector-secret";
const receiver = closedAfterEach();
let browser: Browser;

chromiumForTheFile((launched) => {
  browser = launched;
});

const open = (url: string): Promise<Page> => openLive(browser, url);
const rows = (page: Page) => page.locator("[data-testid=rows] [data-testid=row]");

/** The cells of `column` in the top `count` rows whose text does not fit their width: [text, what it needs, what it has]. */
async function cutCells(page: Page, column: string, count: number): Promise<[string, number, number][]> {
  const cells = rows(page).locator(`.${column}`);
  const cut: [string, number, number][] = [];
  for (let index = 0; index < count; index += 1) {
    const [text, scrollWidth, clientWidth] = await cells.nth(index).evaluate((cell) => [cell.textContent ?? "", cell.scrollWidth, cell.clientWidth] as const);
    if (clientWidth === 0 || scrollWidth > clientWidth) cut.push([text, scrollWidth, clientWidth]);
  }
  return cut;
}

/**
 * Each of `columns` that has a cell cut in the top `count` rows, with those cells. The list
 * scrolls (its scroll bar takes its width, as with a day's requests), the rows looked at are in view.
 */
async function cutColumns(page: Page, columns: readonly string[], count: number): Promise<Record<string, [string, number, number][]>> {
  expect(await page.locator("#list").evaluate((list) => list.scrollHeight > list.clientHeight)).toBe(true);
  const cut: Record<string, [string, number, number][]> = {};
  for (const column of columns) {
    const cells = await cutCells(page, column, count);
    if (cells.length > 0) cut[column] = cells;
  }
  return cut;
}

/** Enough rows before the ones looked at for the list to scroll. */
const EARLIER = 30;

const event = (userId: string, name: string) =>
  JSON.stringify({ version: 1, type: "track", userId, event: name, messageId: `m-${name}`, timestamp: "2026-11-22T10:00:00.000Z" });

describe.skipIf(!available)("the inspector's columns at 1280×800 in Chromium", () => {
  it("wh listen --ui --forward-to: event names, users, verdicts and the app's answers are whole", async () => {
    const app = await receiver({ replies: (request) => (request.body.includes("Checkout") ? 503 : 200) });
    const { listening, inspector } = await startWithUi(["listen", "--secret", SECRET, "--forward-to", app.url], SECRET);
    const page = await open(inspector);
    const earlier = event("u1", "Signed Up");
    for (let index = 0; index < EARLIER; index += 1) await post(`${listening}hook`, earlier, { "x-signature": hmacHex(SECRET, earlier) });
    const bodies = [event("user-1042", "Order Completed"), event("anon-7f3a9c", "Checkout Step Viewed")];
    for (const body of bodies) await post(`${listening}hook`, body, { "x-signature": hmacHex(SECRET, body) });
    // And a batch, whose verdict is the longest.
    const batch = `[${bodies[0]},${bodies[1]}]`;
    await post(`${listening}hook`, batch, { "x-signature": hmacHex(SECRET, bodies[0] ?? "") });
    await expect.poll(() => rows(page).count()).toBe(EARLIER + 3);
    // Newest first: the batch (its second event made the app answer 503), then each event.
    expect((await rows(page).locator(".answer").allTextContents()).slice(0, 3)).toEqual(["503 (app)", "503 (app)", "200 (app)"]);
    expect(await cutColumns(page, ["time", "type", "event", "user", "size", "badge", "answer", "duration"], 3)).toEqual({});
  });

  it("wh serve --ui: event names, users and where each delivery stands are whole", async () => {
    const hook = await receiver({
      replies: (request) => (request.body.includes("Checkout") ? { status: 503, headers: { "retry-after": "30" } } : 200),
    });
    const { listening: api, inspector } = await startWithUi(["serve", "--port", "0", "--url", hook.url], SECRET);
    const page = await open(inspector);
    const authorization = `Basic ${Buffer.from("wk:").toString("base64")}`;
    for (let index = 0; index < EARLIER; index += 1)
      expect(await post(`${api}/v1/track`, JSON.stringify({ userId: "u1", event: "Signed Up" }), { authorization })).toBe(200);
    for (const [userId, name] of [
      ["user-1042", "Order Completed"],
      ["anon-7f3a9c", "Checkout Step Viewed"],
    ])
      expect(await post(`${api}/v1/track`, JSON.stringify({ userId, event: name }), { authorization })).toBe(200);
    await expect.poll(() => page.locator("[data-testid=rows] .delivery.retrying").count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => page.locator("[data-testid=rows] .delivery.delivered").count(), { timeout: 10_000 }).toBe(EARLIER + 1);
    expect(await rows(page).locator(".event").first().textContent()).toBe("Checkout Step Viewed");
    expect(await cutColumns(page, ["time", "type", "event", "user", "size", "badge", "duration", "delivery"], 2)).toEqual({});
  });
});
