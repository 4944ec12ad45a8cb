import { request } from "node:http";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir } from "../../helpers/run-wh.js";
import { basic, servedInTempDirs } from "./serve-helpers.js";

// DNS rebinding against wh serve: a page whose name is rebound to 127.0.0.1 reaches the port, and
// only its Host header says which site it is. In-process; the browser's side of it is
// test/browser/inspector-rebinding.test.ts.

const receiver = closedAfterEach();
const serve = servedInTempDirs();

/** A request to wh serve with this Host header, as a rebound page (or a proxy) sends it. */
function send(url: string, method: string, path: string, host: string, body?: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { hostname, port, method, path, headers: { host, authorization: basic("wk"), "content-type": "application/json" } },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

const EVIL = "evil.example";

describe("wh serve's operator paths and a foreign Host", () => {
  it("refuses /health, /metrics and /retry under a foreign name with 403, never echoing it; its own names and the tracking API answer", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    const { port } = new URL(wh.url);
    for (const [method, path] of [
      ["GET", "/health"],
      ["GET", "/metrics"],
      ["POST", "/retry"],
    ] as const) {
      const foreign = await send(wh.url, method, path, `${EVIL}:${port}`);
      expect(foreign.status, `${method} ${path}`).toBe(403);
      expect(foreign.text).not.toContain(EVIL);
      expect(JSON.parse(foreign.text)).toMatchObject({ success: false, code: "forbidden" });
      // The right name on another port is another server too.
      expect((await send(wh.url, method, path, "localhost:1")).status).toBe(403);
      for (const own of [`127.0.0.1:${port}`, `localhost:${port}`]) expect((await send(wh.url, method, path, own)).status, `${path} as ${own}`).toBe(200);
    }
    expect((await send(wh.url, "GET", "/metrics", `127.0.0.1:${port}`)).text).toContain('wh_serve_requests_total{status="403"} 6');
    // Real SDKs on other machines send to the tracking API by whatever name they were given.
    expect((await send(wh.url, "POST", "/v1/track", `${EVIL}:${port}`, JSON.stringify({ userId: "u1", event: "E" }))).status).toBe(200);
  });

  it("names its own address in the settings for a foreign Host, and the Host for its own names", async () => {
    const wh = await serve(["--url", (await receiver()).url]);
    const { port } = new URL(wh.url);
    const apiHost = async (host: string): Promise<unknown> => {
      const answer = await send(wh.url, "GET", "/v1/projects/wk/settings", host);
      expect(answer.status).toBe(200);
      return (JSON.parse(answer.text) as { integrations: { "Segment.io": { apiHost: string } } }).integrations["Segment.io"].apiHost;
    };
    expect(await apiHost(`${EVIL}:${port}`)).toBe(`127.0.0.1:${port}/v1`);
    expect(await apiHost(`localhost:${port}`)).toBe(`localhost:${port}/v1`);
  });

  it("answers the names --allow-host or allowHosts in the config add, with any port, and echoes them in the settings", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ webhooks: [{ url: (await receiver()).url }], allowHosts: ["wh.internal"] }));
    const fromConfig = await serve([], dir);
    expect((await send(fromConfig.url, "GET", "/health", "WH.internal")).status).toBe(200);
    expect((await send(fromConfig.url, "GET", "/health", EVIL)).status).toBe(403);

    const wh = await serve(["--url", (await receiver()).url, "--allow-host", "proxy.example", "--allow-host", "::1"]);
    expect((await send(wh.url, "GET", "/health", "proxy.example:8443")).status).toBe(200);
    expect((await send(wh.url, "GET", "/metrics", "[::1]:9")).status).toBe(200);
    const settings = await send(wh.url, "GET", "/v1/projects/wk/settings", "proxy.example:8443");
    expect(settings.text).toContain('"apiHost":"proxy.example:8443/v1"');
    // The flag replaces the config's names.
    const replaced = await serve(["--allow-host", "other.example", "--data-dir", "second"], dir);
    expect((await send(replaced.url, "GET", "/health", "wh.internal")).status).toBe(403);
  });

  it("refuses an --allow-host or allowHosts entry that is not a host name, exit 2", async () => {
    const withPort = await runInProcess(["serve", "--port", "0", "--allow-host", "wh.example.com:8787"]);
    expect(withPort.code).toBe(2);
    expect(withPort.stderr).toMatch(/--allow-host "wh\.example\.com:8787": give the name without its port/);
    const dir = await makeTempDir();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ allowHosts: ["http://x/"] }));
    const config = await runInProcess(["config", "validate"], { cwd: dir });
    expect(config.code).toBe(2);
    expect(config.stderr).toMatch(/allowHosts\[0\]: "http:\/\/x\/": not a host name or an IP address/);
  });
});
