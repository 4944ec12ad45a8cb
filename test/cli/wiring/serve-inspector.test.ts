import { afterEach, describe, expect, it } from "vitest";
import { Output } from "../../../src/cli/output/render.js";
import { startServeInspector } from "../../../src/cli/wiring/serve-inspector.js";
import { testIo } from "../../helpers/test-io.js";

// wh serve's inspector passes the "retry now" it is given on to its page (serve.ts wires the
// engine's to it); without one, the page offers none.

const pages: Awaited<ReturnType<typeof startServeInspector>>[] = [];
afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.inspector.close()));
});

async function start(retryNow?: () => number) {
  const { io } = testIo({ cwd: "/", env: {} });
  const page = await startServeInspector("127.0.0.1", {}, new Output(io, {}), { retryNow });
  pages.push(page);
  return page.inspector.url;
}

/** The event stream's first frame. */
async function hello(url: string): Promise<unknown> {
  const controller = new AbortController();
  const response = await fetch(`${url}events`, { signal: controller.signal });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  return JSON.parse((/^data: (.*)$/m.exec(text) as RegExpExecArray)[1] as string);
}

const retry = (url: string) => fetch(`${url}api/retry-now`, { method: "POST", headers: { "x-wh-inspector": "1" }, body: "{}" });

describe("wh serve's inspector and retry now", () => {
  it("offers retry now when given one, and answers how many it retried", async () => {
    const url = await start(() => 4);
    expect(await hello(url)).toMatchObject({ resend: true, retryNow: true });
    const answer = await retry(url);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ retried: 4 });
  });

  it("offers none without one", async () => {
    const url = await start();
    expect(await hello(url)).toMatchObject({ retryNow: false });
    expect((await retry(url)).status).toBe(404);
  });
});
