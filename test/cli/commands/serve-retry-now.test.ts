import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { basic, eventually, post, servedInTempDirs } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

/**
 * A webhook that is down (503, asking for an hour's wait with Retry-After, so no retry comes by
 * itself during a test) until `heal()`; then it answers 200.
 */
async function downForAnHour(body = "database is down") {
  let healed = false;
  const hook = await receiver({ replies: () => (healed ? 200 : { status: 503, headers: { "retry-after": "3600" }, body }) });
  return { hook, heal: () => (healed = true) };
}

const health = async (url: string): Promise<{ retrying: number }> => (await (await fetch(`${url}/health`)).json()) as { retrying: number };

async function trackEach(url: string, users: string[]): Promise<void> {
  for (const userId of users)
    expect((await post(url, "/v1/track", JSON.stringify({ userId, event: "Signed Up" }), { authorization: basic("wk") })).status).toBe(200);
}

describe("wh serve: retry now", () => {
  it("POST /retry sends every delivery waiting to retry at once, answering how many, once the webhook has healed", async () => {
    const { hook, heal } = await downForAnHour();
    const wh = await serve(["--url", hook.url]);
    await trackEach(wh.url, ["u1", "u2", "u3"]);
    await expect.poll(async () => (await health(wh.url)).retrying).toBe(3);
    heal();
    const answer = await fetch(`${wh.url}/retry`, { method: "POST" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("access-control-allow-origin")).toBeNull();
    expect(await answer.json()).toEqual({ retried: 3 });
    // Delivered now, not in an hour: three 503s, then three 200s.
    await eventually(() => hook.requests.length === 6, "three deliveries after the retry");
    await eventually(() => wh.stderr().includes("POST /retry: retrying 3 waiting deliveries now"), "the log line");
    expect((await health(wh.url)).retrying).toBe(0);
    expect(await (await fetch(`${wh.url}/retry`, { method: "POST" })).json()).toEqual({ retried: 0 });
  });

  it("refuses POST /retry from a web page (an Origin header) with 403, and any other method with 405, retrying nothing", async () => {
    const { hook } = await downForAnHour();
    const wh = await serve(["--url", hook.url]);
    await trackEach(wh.url, ["u1"]);
    await expect.poll(async () => (await health(wh.url)).retrying).toBe(1);
    const fromPage = await fetch(`${wh.url}/retry`, { method: "POST", headers: { origin: "https://evil.example" } });
    expect(fromPage.status).toBe(403);
    expect(fromPage.headers.get("access-control-allow-origin")).toBeNull();
    expect(await fromPage.json()).toMatchObject({ code: "forbidden", message: expect.stringContaining("Origin") });
    const get = await fetch(`${wh.url}/retry`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await health(wh.url)).retrying).toBe(1);
    expect(hook.requests).toHaveLength(1);
  });

  it("retries from the inspector's button (wh serve --ui): the page's action reaches the engine, with the same log line", async () => {
    const { hook, heal } = await downForAnHour();
    const wh = await serve(["--url", hook.url, "--ui"]);
    const inspector = /inspector: (http:\/\/\S+\/)/.exec(await wh.waitForStderr((text) => /inspector: http/.test(text)))?.[1];
    await trackEach(wh.url, ["u1", "u2"]);
    await expect.poll(async () => (await health(wh.url)).retrying).toBe(2);
    heal();
    const answer = await fetch(`${inspector}api/retry-now`, { method: "POST", headers: { "x-wh-inspector": "1" } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ retried: 2 });
    await eventually(() => hook.requests.length === 4, "two deliveries after the button");
    expect(wh.stderr()).toContain("retrying 2 waiting deliveries now (the inspector's button)");
  });

  it("says every few seconds what waits on a failing webhook (URL redacted, its answer neutralised), then that it answers again", async () => {
    const { hook, heal } = await downForAnHour("database is down\u001b[2J");
    const withPassword = hook.url.replace("http://", "http://ops:hunter2@");
    const wh = await serve(["--url", withPassword]);
    await trackEach(wh.url, ["u1", "u2"]);
    const waiting = `2 deliveries waiting on ${hook.url.replace("http://", "http://***:***@")}: HTTP 503: database is down`;
    await eventually(() => wh.stderr().includes(waiting), "the waiting line");
    expect(wh.stderr()).toMatch(/; next attempt in (59m \d+s|1h); 2 accepted events not yet delivered in all\n/);
    expect(wh.stderr()).not.toContain("hunter2");
    expect(wh.stderr()).not.toContain("\u001b[2J");
    heal();
    expect((await fetch(`${wh.url}/retry`, { method: "POST" })).status).toBe(200);
    await eventually(() => wh.stderr().includes(`${hook.url.replace("http://", "http://***:***@")} is answering again: 2 delivered`), "the recovery line");
  });

  it("says how many accepted events are not yet delivered in all, those queued behind the deliveries waiting included", async () => {
    const { hook } = await downForAnHour();
    const wh = await serve(["--url", hook.url]);
    // Two users' first events wait to retry; their four later events wait behind them, in order.
    await trackEach(wh.url, ["u1", "u2", "u1", "u2", "u1", "u2"]);
    await expect.poll(async () => (await health(wh.url)).retrying).toBe(2);
    // The line repeats every few seconds: one printed while the six were still arriving counts fewer.
    const waiting = /2 deliveries waiting on \S+: HTTP 503: database is down; next attempt in (59m \d+s|1h); 6 accepted events not yet delivered in all\n/;
    await eventually(() => waiting.test(wh.stderr()), "the waiting line counting all six");
    expect(hook.requests).toHaveLength(2);
  });

  it("says the events not yet delivered once, on a line of its own, when deliveries wait on several URLs", async () => {
    const [first, second] = [await downForAnHour(), await downForAnHour()];
    const wh = await serve(["--url", first.hook.url, "--url", second.hook.url]);
    await trackEach(wh.url, ["u1", "u1", "u1"]);
    for (const { hook } of [first, second]) await eventually(() => wh.stderr().includes(`1 delivery waiting on ${hook.url}`), "a waiting line");
    const told = wh.stderr().split("\n");
    expect(told.filter((line) => line.includes("waiting on")).every((line) => /; next attempt in (59m \d+s|1h)$/.test(line))).toBe(true);
    expect(told).toContain("3 accepted events not yet delivered in all");
  });
});
