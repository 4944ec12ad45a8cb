import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { lines, makeTempDir, removeTempDirs, type WhProcess } from "../helpers/run-wh.js";
import { inProcess } from "../helpers/in-process.js";

/**
 * Debian's Chromium through playwright-core (no browser is downloaded). CI sets
 * WH_REQUIRE_SERVICES=1, which makes a missing Chromium a failure; elsewhere the browser tests are
 * skipped with one line saying so.
 */
const CHROMIUM = process.env.WH_CHROMIUM ?? "/usr/bin/chromium";
export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable && process.env.WH_REQUIRE_SERVICES === "1")
  throw new Error(`WH_REQUIRE_SERVICES=1 but there is no Chromium at ${CHROMIUM} (apt-get install chromium)`);
if (!chromiumAvailable) process.stderr.write(`inspector browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set WH_CHROMIUM)\n`);

/** A headless Chromium that reaches nothing but what a test points it at; `args` adds to its flags. */
export function launchChromium(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
}

/**
 * A Chromium for a test file: launched before its tests (when there is one), closed after them
 * with every wh the file started; `use` receives it.
 */
export function chromiumForTheFile(use: (browser: Browser) => void): void {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (!chromiumAvailable) return;
    browser = await launchChromium();
    use(browser);
  });
  afterAll(async () => {
    await browser?.close();
    await stopAll();
  });
}

const processes: WhProcess[] = [];

/** The URLs a `wh … --ui` printed: where it listens and where its inspector is. */
export interface WithUi {
  wh: WhProcess;
  listening: string;
  inspector: string;
}

/** Starts `wh --json <args> --ui` with the shared secret and waits for the record that names the inspector. */
export async function startWithUi(args: readonly string[], secret: string): Promise<WithUi> {
  const wh = inProcess(["--json", ...args, "--ui"], { cwd: await makeTempDir(), env: { WH_SHARED_SECRET: secret } });
  processes.push(wh);
  await wh.waitForStdout((text) => text.includes('"inspector"'));
  const records = lines(wh.stdout()).map((line) => JSON.parse(line) as Record<string, string>);
  const find = (key: string): string => records.find((record) => record[key] !== undefined)?.[key] as string;
  return { wh, listening: find("listening"), inspector: find("inspector") };
}

/** Stops every wh startWithUi started and removes their directories (for afterAll). */
export async function stopAll(): Promise<void> {
  for (const wh of processes) if (wh.child.exitCode === null) wh.child.kill("SIGTERM");
  await Promise.all(processes.splice(0).map((wh) => wh.exited));
  await removeTempDirs();
}

export async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
  await response.arrayBuffer();
  return response.status;
}

/** An inspector page open at 1280×800 (the width the layout is made for), once its stream is live. */
export async function openLive(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url);
  await page.getByTestId("status").filter({ hasText: "live" }).waitFor();
  return page;
}
