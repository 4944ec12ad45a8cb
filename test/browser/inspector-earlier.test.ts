import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { hmacHex, makeTempDir } from "../helpers/run-wh.js";
import { chromiumAvailable as available, chromiumForTheFile, post, startWithUi } from "./browser-helpers.js";

// wh listen --ui --out FILE remembers: the page of a new run shows what FILE already holds.

const SECRET = "earlier-secret";
let browser: Browser;

chromiumForTheFile((launched) => {
  browser = launched;
});

const rows = (page: Page) => page.locator("[data-testid=rows] [data-testid=row]");

describe.skipIf(!available)("the inspector page of wh listen --ui --out after a restart", () => {
  it("shows the requests the capture already held, marked earlier (not resendable), below this run's", async () => {
    const out = join(await makeTempDir(), "captured.ndjson");
    const args = ["listen", "--secret", SECRET, "--out", out];
    const one = '{"type":"track","userId":"u1","event":"Before Restart","messageId":"m-1"}';
    const first = '{"type":"identify","userId":"u2","messageId":"m-2"}';
    const batch = `[${first},{"type":"track","userId":"u2","event":"B","messageId":"m-3"}]`;
    const before = await startWithUi(args, SECRET);
    expect(await post(before.listening, one, { "x-signature": hmacHex(SECRET, one) })).toBe(200);
    expect(await post(before.listening, batch, { "x-signature": hmacHex(SECRET, first) })).toBe(200);
    before.wh.child.kill("SIGINT");
    expect((await before.wh.exited).code).toBe(0);

    const after = await startWithUi(args, SECRET);
    expect(after.wh.stderr()).toContain(`(with the last 3 requests of ${out}, marked earlier)`);
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    await page.goto(after.inspector);
    await expect.poll(() => rows(page).count()).toBe(3);
    const now = '{"type":"track","userId":"u3","event":"After Restart","messageId":"m-4"}';
    expect(await post(after.listening, now, { "x-signature": hmacHex(SECRET, now) })).toBe(200);
    await expect.poll(() => rows(page).count()).toBe(4);

    // Newest first: this run's request, then the capture's, each marked earlier with its verdict checked again.
    expect(await page.locator("[data-testid=rows] .event").allTextContents()).toEqual(["After Restart", "B", "", "Before Restart"]);
    expect(await page.locator("[data-testid=rows] .answer").allTextContents()).toEqual(["200", "earlier", "earlier", "earlier"]);
    expect(await page.locator("[data-testid=rows] .row.earlier").count()).toBe(3);
    expect(await page.locator("[data-testid=rows] .badge").allTextContents()).toEqual(["valid", "not checked", "valid (batch)", "valid"]);

    await rows(page).nth(3).click();
    await expect.poll(() => page.getByTestId("detail-title").textContent()).toContain("Before Restart");
    expect(await page.getByTestId("detail-answer").textContent()).toContain("not recorded: captured to --out before this wh listen started");
    expect(await page.getByTestId("resend").count()).toBe(0);
    await rows(page).nth(0).click();
    await expect.poll(() => page.getByTestId("resend").count()).toBe(1);
    await page.close();
  });
});
