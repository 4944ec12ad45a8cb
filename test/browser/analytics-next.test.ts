import { once } from "node:events";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { mountTmpfs, type Tmpfs } from "../helpers/tmpfs.js";
import { lines, makeTempDir, removeTempDirs, ROOT } from "../helpers/run-wh.js";
import { eventually, signedBodies, startServe, type ServeProcess } from "../cli/commands/serve-helpers.js";
import { redisAvailable, startRedis, type TestRedis } from "../redis/redis-server.js";
import { chromiumAvailable as available, launchChromium } from "./browser-helpers.js";

// @segment/analytics-next from npm, in Debian's Chromium, against wh serve. The page and the
// SDK's bundles come from a local server (node_modules); Chromium reaches nothing else.

const UMD = join(ROOT, "node_modules", "@segment", "analytics-next", "dist", "umd");
const receiver = closedAfterEach();
let browser: Browser;
let site: { server: Server; url: string };
const running: ServeProcess[] = [];
const mounts: Tmpfs[] = [];

beforeAll(async () => {
  if (!available) return;
  browser = await launchChromium();
  site = await startSite();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
  for (const mount of mounts.splice(0)) mount.unmount();
});
let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
  await browser?.close();
  site?.server.closeAllConnections();
  site?.server.close();
  await removeTempDirs();
});

/** The app's origin: a blank page, and the SDK's bundles where analytics-next looks for them (`<cdnURL>/analytics-next/bundles/`). */
async function startSite(): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0] as string;
    const bundle = /^\/analytics-next\/bundles\/([\w.-]+\.js)$/.exec(path);
    if (path === "/") {
      response.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><title>app</title><script src="/analytics-next/bundles/index.js"></script>');
      return;
    }
    if (bundle === null) {
      response.writeHead(404).end();
      return;
    }
    readFile(join(UMD, bundle[1] as string)).then(
      (body) => response.writeHead(200, { "content-type": "text/javascript" }).end(body),
      () => response.writeHead(404).end(),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function serve(args: readonly string[]): Promise<ServeProcess> {
  const wh = await startServe(args, { cwd: await makeTempDir() });
  running.push(wh);
  return wh;
}

/** Every request the page made to wh serve's tracking API: its headers and the status answered (0: blocked or failed). */
interface Sent {
  method: string;
  retryCount: string | undefined;
  status: number;
}

async function openApp(whUrl: string): Promise<{ page: Page; sent: Sent[] }> {
  const page = await browser.newPage();
  const sent: Sent[] = [];
  const record = async (request: import("playwright-core").Request, failed: boolean): Promise<void> => {
    if (!request.url().startsWith(`${whUrl}/v1/`)) return;
    const response = failed ? null : await request.response();
    sent.push({ method: request.method(), retryCount: (await request.allHeaders())["x-retry-count"], status: response?.status() ?? 0 });
  };
  page.on("requestfinished", (request) => void record(request, false));
  page.on("requestfailed", (request) => void record(request, true));
  await page.goto(site.url);
  return { page, sent };
}

describe.skipIf(!available)("@segment/analytics-next in Chromium against wh serve", () => {
  it("retries an event wh answered 503 (its spool's disk full), and the retry with X-Retry-Count passes CORS and is delivered once", async () => {
    const disk = mountTmpfs(512 * 1024);
    if (typeof disk === "string") return;
    mounts.push(disk);
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--data-dir", join(disk.dir, "serve")]);
    const { page, sent } = await openApp(wh.url);
    const apiHost = `${new URL(wh.url).host}/v1`;
    await page.evaluate(
      async ({ apiHost, cdnURL }) => {
        const { AnalyticsBrowser } = (globalThis as unknown as { AnalyticsNext: typeof import("@segment/analytics-next") }).AnalyticsNext;
        const [analytics] = await AnalyticsBrowser.load(
          { writeKey: "wk-browser", cdnURL, cdnSettings: { integrations: { "Segment.io": { apiKey: "wk-browser", apiHost, protocol: "http" } } } },
          { disableClientPersistence: true },
        );
        (globalThis as unknown as { analytics: typeof analytics }).analytics = analytics;
      },
      { apiHost, cdnURL: site.url },
    );
    // The disk fills up: wh cannot keep the event, so it answers 503.
    const filler = join(disk.dir, "filler");
    const fd = openSync(filler, "w");
    try {
      for (;;) writeSync(fd, Buffer.alloc(4096, 1));
    } catch {
      // ENOSPC: the disk is full.
    } finally {
      closeSync(fd);
    }
    await page.evaluate(
      () =>
        void (globalThis as unknown as { analytics: { track(name: string, properties: object): Promise<unknown> } }).analytics.track("Browser Retry", { n: 1 }),
    );
    await eventually(() => lines(wh.stdout()).some((line) => line.includes('"status":503')), "wh's 503");
    rmSync(filler);
    await eventually(() => hook.requests.length === 1, "the retried event's delivery");
    const [delivered] = signedBodies(hook.requests);
    expect(delivered).toMatchObject({ type: "track", event: "Browser Retry", properties: { n: 1 } });
    const posts = (): Sent[] => sent.filter((request) => request.method === "POST");
    await expect.poll(() => posts().at(-1)).toMatchObject({ retryCount: expect.stringMatching(/^\d+$/), status: 200 });
    expect(posts()[0]).toMatchObject({ retryCount: undefined, status: 503 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.requests.length).toBe(1);
  });

  for (const store of ["spool", "redis"] as const) {
    it.skipIf(store === "redis" && !redisAvailable)(
      `loads with cdnURL alone, its settings from wh serve pointing at it, and delivers every call (${store})`,
      async () => {
        const hook = await receiver();
        if (store === "redis") redis ??= await startRedis();
        const wh = await serve(["--url", hook.url, ...(store === "redis" ? ["--queue", `${(redis as TestRedis).url}/5`] : [])]);
        const { page, sent } = await openApp(wh.url);
        const errors: string[] = [];
        page.on("console", (message) => {
          if (message.type() === "error") errors.push(message.text());
        });
        await page.evaluate(async (cdnURL) => {
          const { AnalyticsBrowser } = (globalThis as unknown as { AnalyticsNext: typeof import("@segment/analytics-next") }).AnalyticsNext;
          const [analytics] = await AnalyticsBrowser.load({ writeKey: "wk-cdn", cdnURL }, { disableClientPersistence: true });
          await analytics.identify("u-browser", { plan: "pro" });
          await analytics.track("From The Browser", { n: 1 });
          await analytics.page("Docs", "Pricing");
        }, wh.url);
        await eventually(() => hook.requests.length === 3, "three deliveries");
        const bodies = signedBodies(hook.requests);
        expect(bodies.map((body) => body.type)).toEqual(["identify", "track", "page"]);
        expect(bodies[1]).toMatchObject({ userId: "u-browser", event: "From The Browser", context: { library: { name: "analytics.js" } } });
        expect(sent.filter((request) => request.method === "GET")).toEqual([{ method: "GET", retryCount: undefined, status: 200 }]);
        expect(errors).toEqual([]);
      },
    );
  }
});
