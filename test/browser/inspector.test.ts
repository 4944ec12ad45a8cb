import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { hmacHex, lines, makeTempDir } from "../helpers/run-wh.js";
import { trackSubscription } from "../cli/commands/serve-subscriptions-scenario.js";
import { shellWords } from "../helpers/shell-words.js";
import { chromiumAvailable as available, post, startWithUi, chromiumForTheFile } from "./browser-helpers.js";

// The inspector page, driven in a real browser (see browser-helpers.ts).

const SECRET = "inspector-secret";
const receiver = closedAfterEach();
let browser: Browser;

chromiumForTheFile((launched) => {
  browser = launched;
});

/** Opens the page and fails the test on any dialog: a script from a request would show one. */
async function open(url: string): Promise<{ page: Page; dialogs: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(url);
  await page.getByTestId("status").filter({ hasText: "live" }).waitFor();
  return { page, dialogs };
}

// The rows a person sees: a filter's hidden attribute counts only if the row really leaves the screen.
const rows = (page: Page) => page.locator("[data-testid=rows] [data-testid=row]").filter({ visible: true });

describe.skipIf(!available)("the inspector page (wh listen --ui) in Chromium", () => {
  it("shows each request live with its verdict; opens, filters, resends, copies; and shows hostile text as text", async () => {
    const other = await receiver();
    const { wh, listening, inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const { page, dialogs } = await open(inspector);

    const signed = '{"version":1,"type":"track","userId":"u1","event":"Order Completed","messageId":"m-1","timestamp":"2026-11-22T10:00:00.000Z"}';
    const unsigned = '{"version":1,"type":"identify","userId":"u2","messageId":"m-2","timestamp":"2026-11-22T10:00:00.000Z"}';
    const forged = '{"version":1,"type":"page","userId":"u3","name":"Home","messageId":"m-3","timestamp":"2026-11-22T10:00:00.000Z"}';
    const first = '{"type":"track","userId":"u4","event":"A"}';
    const batch = `[${first},{"type":"track","userId":"u4","event":"B"}]`;
    const hostile =
      '{"version":1,"type":"track","userId":"<b>u5</b>","event":"<img src=x onerror=alert(1)><script>alert(2)</script>","messageId":"m-5","timestamp":"2026-11-22T10:00:00.000Z"}';
    expect(await post(`${listening}hook`, signed, { "x-signature": hmacHex(SECRET, signed), "x-custom": "kept" })).toBe(200);
    expect(await post(`${listening}hook`, unsigned)).toBe(401);
    expect(await post(`${listening}hook`, forged, { "x-signature": hmacHex(SECRET, `${forged}\n`) })).toBe(401);
    expect(await post(`${listening}hook`, batch, { "x-signature": hmacHex(SECRET, first) })).toBe(200);
    expect(await post(`${listening}hook`, hostile, { "x-signature": hmacHex(SECRET, hostile), "x-evil": "<script>alert(3)</script>" })).toBe(200);

    await expect.poll(() => rows(page).count()).toBe(5);
    // Newest first: the verdict column of each row.
    expect(await page.locator("[data-testid=rows] .badge").allTextContents()).toEqual(["valid", "valid (batch)", "invalid", "unsigned", "valid"]);

    // Open the forged one: the --explain reason, its headers, its body pretty and raw.
    await rows(page).nth(2).click();
    await expect.poll(() => page.getByTestId("detail-verdict").textContent()).toContain("a trailing newline");
    // The reason wh listen's own line gives (its --json record here), word for word.
    const refused = lines(wh.stdout()).map((line) => JSON.parse(line) as { signature?: string; reason?: string });
    expect(await page.getByTestId("detail-verdict").textContent()).toBe(`invalid: ${refused.find((record) => record.signature === "invalid")?.reason}`);
    expect(await page.getByTestId("detail-headers").textContent()).toContain("x-signature");
    expect(await page.getByTestId("detail-body").textContent()).toContain('"name": "Home"');
    await page.getByTestId("toggle-raw").click();
    expect(await page.getByTestId("detail-body").textContent()).toBe(forged);
    expect(await page.getByTestId("detail-answer").textContent()).toContain("401");

    // Filters: by verdict, by user, by type.
    await page.getByTestId("filter-verdict").selectOption("invalid");
    await expect.poll(() => rows(page).count()).toBe(1);
    // On screen: the row just under the one left is no row at all (before, every row stayed there).
    const left = await rows(page).first().boundingBox();
    const [x, y] = [(left?.x ?? 0) + 20, (left?.y ?? 0) + (left?.height ?? 0) * 1.5];
    const under = await page.evaluate(`document.elementFromPoint(${x}, ${y})?.closest("[data-testid=row]")?.textContent ?? null`);
    expect(under).toBeNull();
    await page.getByTestId("filter-verdict").selectOption("");
    await page.getByTestId("filter-user").fill("u4");
    await expect.poll(() => rows(page).count()).toBe(1);
    await page.getByTestId("filter-user").fill("");
    await page.getByTestId("filter-type").selectOption("identify");
    await expect.poll(() => rows(page).count()).toBe(1);
    await page.getByTestId("filter-type").selectOption("");
    await expect.poll(() => rows(page).count()).toBe(5);

    // The hostile request: every character on screen as text, no element made from it, no dialog.
    await rows(page).nth(0).click();
    expect(await page.getByTestId("detail-body").textContent()).toContain("<img src=x onerror=alert(1)><script>alert(2)</script>");
    expect(await page.getByTestId("detail-headers").textContent()).toContain("<script>alert(3)</script>");
    expect(await rows(page).nth(0).textContent()).toContain("<b>u5</b>");
    expect(await page.locator("#detail img, #detail script, #detail b, #rows b").count()).toBe(0);

    // Resend the signed one, as it came, to another receiver: same bytes, same signature.
    await rows(page).nth(4).click();
    await page.getByTestId("copy-curl").click();
    const curl = await page.getByTestId("copied").textContent();
    expect(curl).toMatch(/^curl -X 'POST' 'http:\/\/127\.0\.0\.1:\d+\/hook' /);
    expect(curl).toContain(`-H 'x-signature: ${hmacHex(SECRET, signed)}'`);
    expect(curl).toContain(`--data-binary '${signed}'`);
    await page.getByTestId("copy-wh").click();
    expect(await page.getByTestId("copied").textContent()).toBe(`wh send 'track' --data '${signed}' --url '${listening}hook'`);
    await page.getByTestId("resend-url").fill(other.url);
    await page.getByTestId("resend").click();
    await expect.poll(() => other.requests.length).toBe(1);
    expect(other.requests[0]?.body.toString("utf8")).toBe(signed);
    expect(other.requests[0]?.headers["x-signature"]).toBe(hmacHex(SECRET, signed));
    expect(other.requests[0]?.headers["x-custom"]).toBe("kept");
    await expect.poll(() => page.getByTestId("resends").textContent()).toContain("HTTP 200");
    // Re-signed, to the same URL it came to: wh listen verifies it again.
    await page.getByTestId("resend-url").fill("");
    await page.getByTestId("resend-resign").check();
    await page.getByTestId("resend").click();
    await expect.poll(() => rows(page).count()).toBe(6);
    expect(await page.locator("[data-testid=rows] .badge").first().textContent()).toBe("valid");

    expect(dialogs).toEqual([]);
  });

  it("copies a request whose type, path and body are shell syntax as commands that pass each as one word", async () => {
    const { listening, inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const { page } = await open(inspector);
    const type = "track; touch type-injected #";
    const path = "/hook';touch$IFS'path-injected';'";
    const body = JSON.stringify({ type, userId: "u1", event: "it's $(touch body-injected) `touch body-2`" });
    expect(await post(`${listening}${path.slice(1)}`, body, { "x-signature": hmacHex(SECRET, body) })).toBe(200);
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().click();
    const dir = await makeTempDir();
    const url = new URL(path.slice(1), listening).href;
    await page.getByTestId("copy-wh").click();
    expect(await shellWords((await page.getByTestId("copied").textContent()) as string, dir)).toEqual(["wh", "send", "track", "--data", body, "--url", url]);
    await page.getByTestId("copy-curl").click();
    const curl = await shellWords((await page.getByTestId("copied").textContent()) as string, dir);
    expect(curl.slice(0, 4)).toEqual(["curl", "-X", "POST", url]);
    expect(curl.slice(-2)).toEqual(["--data-binary", body]);
    // makeTempDir's own package.json, and nothing the commands could have made.
    expect(await readdir(dir)).toEqual(["package.json"]);
  });

  it("wh serve --ui with subscriptions names each delivery's subscription", async () => {
    const hook = await receiver();
    const file = join(await makeTempDir(), "subscriptions.json");
    const subscription = (name: string, path: string) => trackSubscription(name, `${hook.url}${path}`);
    await writeFile(file, JSON.stringify([subscription("Warehouse", "/w"), subscription("CRM", "/c")]));
    const { listening: api, inspector } = await startWithUi(["serve", "--port", "0", "--subscriptions", file], SECRET);
    const { page, dialogs } = await open(inspector);
    expect(
      await post(`${api}/v1/track`, JSON.stringify({ userId: "u1", event: "Routed" }), { authorization: `Basic ${Buffer.from("wk:").toString("base64")}` }),
    ).toBe(200);
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().click();
    await expect
      .poll(() => page.getByTestId("delivery-subscription").allTextContents(), { timeout: 10_000 })
      .toEqual(expect.arrayContaining(["Warehouse", "CRM"]));
    const lines = await page.locator("[data-testid=detail-deliveries] > div").allTextContents();
    expect(lines.find((line) => line.includes("/hook/w"))).toMatch(/^Warehouse attempt 1 to /);
    expect(lines.find((line) => line.includes("/hook/c"))).toMatch(/^CRM attempt 1 to /);
    expect(dialogs).toEqual([]);
  });

  it("wh serve --ui shows each accepted event with its deliveries", async () => {
    const hook = await receiver({ replies: [503, 200] });
    const { listening: api, inspector } = await startWithUi(["serve", "--port", "0", "--url", hook.url], SECRET);
    const { page, dialogs } = await open(inspector);
    expect(
      await post(`${api}/v1/track`, JSON.stringify({ userId: "u1", event: "Served" }), { authorization: `Basic ${Buffer.from("wk:").toString("base64")}` }),
    ).toBe(200);
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await rows(page).first().textContent()).toContain("accepted");
    await rows(page).first().click();
    await expect.poll(() => page.getByTestId("detail-deliveries").textContent()).toMatch(/attempt 1 to .*HTTP 503.*attempt 2 to .*HTTP 200/);
    expect(await page.getByTestId("detail-body").textContent()).toContain('"event": "Served"');
    expect(dialogs).toEqual([]);
  });

  it("shows each row's date and event name, searches bodies, resends an edited body re-signed as typed, and clears", async () => {
    const other = await receiver();
    const { listening, inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const { page, dialogs } = await open(inspector);
    for (const [event, note] of [
      ["Order Completed", "the needle"],
      ["Signed Up", "hay"],
    ]) {
      const body = JSON.stringify({ type: "track", userId: "u1", event, properties: { note } });
      expect(await post(`${listening}hook`, body, { "x-signature": hmacHex(SECRET, body) })).toBe(200);
    }
    await expect.poll(() => rows(page).count()).toBe(2);
    expect(await rows(page).locator(".event").allTextContents()).toEqual(["Signed Up", "Order Completed"]);
    expect(await rows(page).first().locator(".time").textContent()).toMatch(/^[A-Z][a-z]{2} \d{1,2} \d{2}:\d{2}:\d{2}$/);
    expect(await rows(page).first().locator(".time").getAttribute("title")).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    // Body search, whatever the case.
    await page.getByTestId("filter-body").fill("NEEDLE");
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().click();
    expect(await page.getByTestId("detail-title").textContent()).toContain("“Order Completed”");
    expect(await page.getByTestId("detail-when").textContent()).toMatch(/^received .*\d{4}-\d{2}-\d{2}T/);
    await page.getByTestId("filter-body").fill("");
    await expect.poll(() => rows(page).count()).toBe(2);

    // Edited, the body can only go re-signed, and goes exactly as typed.
    await page.getByTestId("edit-body").click();
    const edited = '{"type":"track",  "userId":"u1","event":"Order Completed","properties":{"note":"edited é"}}\n';
    await page.getByTestId("resend-body").fill(edited);
    expect(await page.getByTestId("resend-resign").isChecked()).toBe(true);
    expect(await page.getByTestId("resend-resign").isDisabled()).toBe(true);
    expect(await page.getByTestId("resend-note").textContent()).toContain("re-signed");
    await page.getByTestId("resend-url").fill(other.url);
    await page.getByTestId("resend").click();
    await expect.poll(() => other.requests.length).toBe(1);
    expect(other.requests[0]?.body.toString("utf8")).toBe(edited);
    expect(other.requests[0]?.headers["x-signature"]).toBe(hmacHex(SECRET, edited));
    await expect.poll(() => page.getByTestId("resends").textContent()).toContain("resent re-signed");

    // Clear empties this page, the server's list (a page opened after shows nothing) and every page open.
    const second = await open(inspector);
    await expect.poll(() => rows(second.page).count()).toBe(2);
    await page.getByTestId("clear").click();
    await expect.poll(() => rows(page).count()).toBe(0);
    await expect.poll(() => rows(second.page).count()).toBe(0);
    expect(await page.getByTestId("detail").textContent()).toContain("Select a request");
    const third = await open(inspector);
    await third.page.waitForTimeout(200);
    expect(await rows(third.page).count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it("wh serve --ui shows where each delivery stands, and resends to the webhook by default", async () => {
    const hook = await receiver({
      // Retry-After holds the retry off for an hour: only the retry-now button brings it.
      replies: (request) => (request.body.includes("Broken") ? { status: 500, headers: { "retry-after": "3600" }, body: "database is down" } : 200),
    });
    const { listening: api, inspector } = await startWithUi(["serve", "--port", "0", "--url", hook.url, "--max-attempts", "2"], SECRET);
    const { page, dialogs } = await open(inspector);
    const authorization = `Basic ${Buffer.from("wk:").toString("base64")}`;
    for (const event of ["Fine", "Broken"]) expect(await post(`${api}/v1/track`, JSON.stringify({ userId: "u1", event }), { authorization })).toBe(200);
    await expect.poll(() => rows(page).count()).toBe(2);
    // The column shows once there are serve's entries, and so does the retry-now button.
    expect(await page.locator(".head .delivery").isVisible()).toBe(true);
    expect(await page.getByTestId("retry-now").isVisible()).toBe(true);
    const broken = rows(page).first();
    await expect.poll(() => rows(page).nth(1).locator(".delivery").textContent()).toBe("delivered 200");
    await expect.poll(() => broken.locator(".delivery").textContent()).toMatch(/^retrying at \d{2}:\d{2}:\d{2}$/);
    expect(await broken.locator(".delivery").getAttribute("title")).toContain("HTTP 500: database is down");
    // The button sends the waiting attempt now: the second and last, so the event fails.
    await page.getByTestId("retry-now").click();
    await expect.poll(() => broken.locator(".delivery").textContent()).toBe("failed");
    expect(hook.requests.filter((request) => request.body.includes("Broken"))).toHaveLength(2);
    await broken.click();
    expect(await page.getByTestId("detail-delivery").textContent()).toBe(
      `failed after 2 attempts: ${hook.url} → HTTP 500: database is down (gave up after 2 attempts)`,
    );
    expect(await page.getByTestId("resend-url").getAttribute("placeholder")).toBe(`same URL (${hook.url})`);
    expect(dialogs).toEqual([]);
  });
});
