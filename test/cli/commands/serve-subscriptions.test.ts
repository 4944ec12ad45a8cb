import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inProcess, runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { exists, readNdjson } from "./replay-helpers.js";
import type { InspectorEntry } from "../../../src/adapters/inspector/protocol.js";
import { lines, makeTempDir, STACK_TRACE } from "../../helpers/run-wh.js";
import { basic, eventually, post, SECRET, servedInTempDirs } from "./serve-helpers.js";
import { expectRoutedDeliveries, expectSkippedGroups, replies, sendEvents, subscriptionsDir, trackSubscription } from "./serve-subscriptions-scenario.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

describe("wh serve with subscriptions (the spool)", () => {
  it("a real analytics-node client's 300 events: each once to each subscription its trigger matches, mapped, signed, each user's in order; the unmatched skipped", async () => {
    const hook = await receiver({ replies });
    const wh = await serve([], await subscriptionsDir(hook));
    await sendEvents(wh.url);
    await expectRoutedDeliveries(hook);
    await expectSkippedGroups(wh.url);
    expect(wh.stderr()).not.toMatch(STACK_TRACE);
  });
});

describe("wh serve --subscriptions FILE", () => {
  it("says what it delivers to; a subscription whose receiver refuses the event gets a dead letter naming it, the other its delivery; put back, it goes there alone", async () => {
    let healed = false;
    const hook = await receiver({ replies: (request) => (request.path === "/hook/bad" && !healed ? 400 : 200) });
    const dir = await makeTempDir();
    const subscription = (name: string, path: string) => trackSubscription(name, `${hook.url}${path}`);
    await writeFile(join(dir, "subs.json"), JSON.stringify({ data: { subscriptions: [subscription("Good", "/ok"), subscription("Bad", "/bad")] } }));
    const wh = await serve(["--subscriptions", "subs.json"], dir);
    expect(wh.stderr()).toContain('delivering → subscription "Good" (type = "track"), subscription "Bad" (type = "track") (actions)');
    expect(
      (await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Signed Up", messageId: "m1" }), { authorization: basic("wk") })).status,
    ).toBe(200);
    const deadLetters = join(dir, ".wh/serve/dead-letters.ndjson");
    await expect.poll(async () => (await exists(deadLetters)) && (await readNdjson(deadLetters)).length === 1, { timeout: 10_000 }).toBe(true);
    const [letter] = (await readNdjson(deadLetters)) as { outcome: string; reason: string; subscriptions: string[] }[];
    expect(letter?.outcome).toBe("failed");
    expect(letter?.subscriptions).toEqual(["Bad"]);
    expect(letter?.reason).toMatch(/^subscription "Bad": .*HTTP 400/);
    await eventually(() => hook.requests.some((request) => request.path === "/hook/ok"));
    expect(hook.requests.map((request) => request.path).sort()).toEqual(["/hook/bad", "/hook/ok"]);

    await wh.stop();
    healed = true;
    const replayed = await runInProcess(["serve", "dead-letters", "replay"], { cwd: dir });
    expect(replayed.code, replayed.stderr).toBe(0);
    // Without --json, the delivery's line names the subscriptions it went to.
    const again = inProcess(["serve", "--port", "0", "--subscriptions", "subs.json"], { cwd: dir, env: { WH_SHARED_SECRET: SECRET } });
    await again.waitForStderr((text) => text.includes('→ track "Signed Up" by u1 (messageId m1) delivered to subscription "Bad"\n'));
    again.child.kill("SIGTERM");
    await again.exited;
    // Once more to Bad, and not again to Good.
    expect(hook.requests.map((request) => request.path).slice(2)).toEqual(["/hook/bad"]);
    expect(hook.requests).toHaveLength(3);
  });
});

/** The inspector's entries as its event stream sends them (each change sends the entry again), until `done` holds of the latest. */
async function inspectorEntries(inspector: string, done: (entries: Map<number, InspectorEntry>) => boolean): Promise<Map<number, InspectorEntry>> {
  const events = new URL(inspector);
  events.pathname = "/events";
  const controller = new AbortController();
  const reader = ((await fetch(events, { signal: controller.signal })).body as ReadableStream<Uint8Array>).getReader();
  const entries = new Map<number, InspectorEntry>();
  let text = "";
  const deadline = Date.now() + 15_000;
  while (!done(entries) && Date.now() < deadline) {
    const { done: ended, value } = await reader.read();
    if (ended) break;
    text += new TextDecoder().decode(value);
    const frames = text.split("\n\n");
    text = frames.pop() ?? "";
    for (const frame of frames) {
      if (!frame.startsWith("event: entry")) continue;
      const entry = JSON.parse(frame.slice(frame.indexOf("data: ") + 6)) as InspectorEntry;
      entries.set(entry.id, entry);
    }
  }
  controller.abort();
  return entries;
}

describe("wh serve --ui with subscriptions", () => {
  it("each delivery line of the inspector names its subscription; an event is delivered once every subscription has it", async () => {
    let refusedOnce = false;
    const hook = await receiver({
      replies: (request) => {
        if (request.path !== "/hook/a" || refusedOnce) return 200;
        refusedOnce = true;
        return 500;
      },
    });
    const dir = await makeTempDir();
    const subscription = (name: string, trigger: string, settings: Record<string, unknown>) => ({ name, actionSlug: "send", enabled: true, trigger, settings });
    const subscriptions = [
      subscription("Tracks", 'type = "track"', { url: `${hook.url}/a` }),
      subscription("Orders", 'event = "Order Completed"', { url: `${hook.url}/c`, enable_batching: true, batch_size: 2 }),
    ];
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sharedSecret: "s", subscriptions }));
    const wh = await serve(["--ui"], dir);
    await wh.waitForStdout((text) => text.includes('"inspector"'));
    const inspector = lines(wh.stdout())
      .map((line) => JSON.parse(line) as { inspector?: string })
      .find((record) => record.inspector !== undefined)?.inspector as string;
    const batch = ["o1", "o2"].map((messageId) => ({ type: "track", userId: "u1", event: "Order Completed", messageId }));
    expect((await post(wh.url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") })).status).toBe(200);
    const entries = await inspectorEntries(inspector, (seen) => seen.size === 2 && [...seen.values()].every((entry) => entry.delivery?.state === "delivered"));
    expect([...entries.values()].map((entry) => entry.delivery?.state)).toEqual(["delivered", "delivered"]);
    for (const entry of entries.values()) {
      const lines = entry.deliveries ?? [];
      expect(
        lines.every((line) => line.subscription === "Tracks" || line.subscription === "Orders"),
        JSON.stringify(lines),
      ).toBe(true);
      expect(new Set(lines.filter((line) => line.outcome === "delivered").map((line) => line.subscription))).toEqual(new Set(["Tracks", "Orders"]));
    }
    // A resend goes where a subscription's delivery went, not to the tracking API.
    for (const entry of entries.values()) expect(entry.resendTo).toMatch(/\/hook\/[ac]$/);
    // The refused attempt and its retry are Tracks' lines, to /a.
    const all = [...entries.values()].flatMap((entry) => entry.deliveries ?? []);
    expect(all.find((line) => line.outcome === "failed")).toMatchObject({ subscription: "Tracks", text: expect.stringMatching(/\/hook\/a: HTTP 500/) });
  });
});
