import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { exists, readNdjson } from "./replay-helpers.js";
import { makeTempDir, STACK_TRACE } from "./run-wh.js";
import { basic, eventually, post, servedInTempDirs } from "./serve-helpers.js";
import { expectRoutedDeliveries, expectSkippedGroups, replies, sendEvents, subscriptionsDir } from "./serve-subscriptions-scenario.js";

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
  it("says what it delivers to; a subscription whose receiver refuses the event gets a dead letter naming it, the other its delivery", async () => {
    const hook = await receiver({ replies: (request) => (request.path === "/hook/bad" ? 400 : 200) });
    const dir = await makeTempDir();
    const subscription = (name: string, path: string) => ({
      name,
      actionSlug: "send",
      enabled: true,
      trigger: 'type = "track"',
      settings: { url: `${hook.url}${path}` },
    });
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
  });
});
