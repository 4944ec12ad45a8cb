import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs, STACK_TRACE, type RunOptions, type RunResult } from "../../helpers/run-wh.js";
import { startServe } from "./serve-helpers.js";

// Addresses, queue URLs and sources that cannot work: usage or config errors (exit 2) naming the
// flag or the sources, never an internal error (70). In-process.

const receiver = closedAfterEach();
afterAll(removeTempDirs);

/** A working directory holding .whrc.json with `config`. */
async function withConfig(config: unknown): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(join(dir, ".whrc.json"), `${JSON.stringify(config, null, 2)}\n`);
  return dir;
}

async function expectUsageError(args: readonly string[], message: RegExp, options: RunOptions = {}): Promise<RunResult> {
  const result = await runInProcess(args, options);
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(2);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(STACK_TRACE);
  return result;
}

describe("an address that cannot be listened on is a usage error naming --host", () => {
  it.each([
    ["999.1.1.1", /--host 999\.1\.1\.1: /],
    ["192.0.2.1", /--host 192\.0\.2\.1: no network interface of this machine has that address/],
    ["no-such-host.invalid", /--host no-such-host\.invalid: /],
    ["1.2.3", /--host 1\.2\.3: not a valid IPv4 address/],
    ["[::1]", /--host "\[::1\]": not an IP address or a host name\n {2}give an IPv6 address without the brackets: --host ::1/],
  ])("refuses wh listen --host %s with exit 2", async (host, message) => {
    await expectUsageError(["listen", "--host", host], message);
  });

  it("refuses an empty wh listen --host rather than listening on every interface", async () => {
    await expectUsageError(["listen", "--host", ""], /--host "": /);
  });

  it.each([["999.1.1.1"], ["192.0.2.1"]])("refuses wh serve --host %s with exit 2", async (host) => {
    await expectUsageError(["serve", "--port", "0", "--host", host], new RegExp(`--host ${host.replaceAll(".", "\\.")}: `));
  });

  it("refuses wh serve --ui --host 192.0.2.1 (the inspector binds first) with exit 2", async () => {
    await expectUsageError(["serve", "--port", "0", "--ui", "--host", "192.0.2.1"], /--host 192\.0\.2\.1: /);
  });
});

describe("a queue URL that is not a Redis address is a usage error before connecting", () => {
  it.each([
    ["redis://127.0.0.1:6379/notanumber", /--queue "redis:\/\/127\.0\.0\.1:6379\/notanumber": the database .* is not a number/],
    ["redis://127.0.0.1:6379/1.5", /--queue "redis:\/\/127\.0\.0\.1:6379\/1\.5": the database .* is not a number/],
    ["redis:///0", /--queue "redis:\/\/\/0": no host/],
    ["redis://127.0.0.1:99999/0", /--queue "redis:\/\/127\.0\.0\.1:99999\/0": not a valid URL/],
  ])("refuses wh serve --queue %s with exit 2", async (url, message) => {
    await expectUsageError(["serve", "--port", "0", "--queue", url], message);
  });

  it("refuses the same URL in wh serve dead-letters list", async () => {
    await expectUsageError(
      ["serve", "dead-letters", "list", "--queue", "redis://127.0.0.1:6379/notanumber"],
      /--queue "redis:\/\/127\.0\.0\.1:6379\/notanumber": the database/,
    );
  });

  it("refuses it in the config's queue, naming the path, in wh config validate", async () => {
    const cwd = await withConfig({ webhooks: [{ url: "https://example.com/hook" }], queue: "redis://127.0.0.1:6379/notanumber" });
    await expectUsageError(["config", "validate"], /queue: .*the database "notanumber" is not a number/, { cwd });
  });
});

describe("sources that would misroute or cannot be reached", () => {
  it("refuses two sources with the same writeKey in wh config validate, naming both", async () => {
    const cwd = await withConfig({
      sources: {
        web: { writeKey: "wk-same", webhooks: [{ url: "https://a.example.com/hook" }] },
        ios: { writeKey: "wk-same", webhooks: [{ url: "https://b.example.com/hook" }] },
      },
    });
    const result = await expectUsageError(["config", "validate"], /sources\.ios\.writeKey: the same writeKey as sources\.web/, { cwd });
    expect(result.stderr).not.toContain("wk-same");
  });

  it("refuses sources: {} in wh config validate", async () => {
    const cwd = await withConfig({ sources: {} });
    await expectUsageError(["config", "validate"], /sources: no sources: define at least one, or leave sources out/, { cwd });
  });

  it("refuses wh serve with a source that has no writeKey, naming it, before listening", async () => {
    const hook = await receiver();
    const cwd = await withConfig({
      sources: {
        web: { writeKey: "wk-web", webhooks: [{ url: hook.url }] },
        ios: { webhooks: [{ url: hook.url }] },
        old: { enabled: false, webhooks: [{ url: hook.url }] },
      },
    });
    const result = await expectUsageError(["serve", "--port", "0"], /sources\.ios, sources\.old: no writeKey/, { cwd });
    expect(result.stdout).not.toContain("listening");
  });

  it("serves the one source --source names even when another source has no writeKey", async () => {
    const hook = await receiver();
    const cwd = await withConfig({ sources: { web: { writeKey: "wk-web", webhooks: [{ url: hook.url }] }, ios: { webhooks: [{ url: hook.url }] } } });
    const wh = await startServe(["--source", "web"], { cwd });
    try {
      expect(wh.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await wh.stop();
    }
  });

  it("passes a source without a writeKey in wh config validate: wh send --source and delete need none", async () => {
    const cwd = await withConfig({
      sources: { web: { writeKey: "wk-web", webhooks: [{ url: "https://a.example.com/hook" }] }, ios: { webhooks: [{ url: "https://b.example.com/hook" }] } },
    });
    const result = await runInProcess(["config", "validate"], { cwd });
    expect(result.code, result.stderr).toBe(0);
  });
});
