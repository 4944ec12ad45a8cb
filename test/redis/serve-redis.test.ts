// In-process, but for the forwarder killed with kill -9, which spawns bin/wh.cjs (dist/).
import { Analytics } from "@segment/analytics-node";
import { createClient } from "@redis/client";
import { QueueKeys } from "../../src/adapters/redis/connection.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordedRequest } from "../helpers/recording-server.js";
import { inProcess, runInProcess } from "../helpers/in-process.js";
import { lines, makeTempDir, removeTempDirs, run, spawnWh, type Launch } from "../helpers/run-wh.js";
import { basic, eventually, post, SECRET, signedBodies, startServe, type ServeProcess } from "../cli/commands/serve-helpers.js";
import { redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
let redis: TestRedis;
let queue = 0;

beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});
afterAll(async () => {
  await redis?.stop();
  await removeTempDirs();
});

/** Each test its own Redis database, so queues never meet. */
function freshQueue(): string {
  queue += 1;
  return `${redis.url}/${queue}`;
}

/** wh serve in a fresh directory: in-process, unless `launch` is spawnWh (to kill -9 it). */
async function serve(args: readonly string[], launch: Launch = inProcess): Promise<ServeProcess> {
  const process = await startServe(args, { cwd: await makeTempDir() }, launch);
  running.push(process);
  return process;
}

/** The messageIds delivered, first arrivals only, read incrementally (the check runs often). */
function arrivals(requests: RecordedRequest[]): () => { ids: Set<string>; byUser: Map<string, number[]> } {
  const ids = new Set<string>();
  const byUser = new Map<string, number[]>();
  let read = 0;
  return () => {
    for (const body of signedBodies(requests.slice(read))) {
      const id = body.messageId as string;
      if (ids.has(id)) continue;
      ids.add(id);
      const index = (body.properties as { index?: number } | undefined)?.index;
      if (typeof index === "number") byUser.set(body.userId as string, [...(byUser.get(body.userId as string) ?? []), index]);
    }
    read = requests.length;
    return { ids, byUser };
  };
}

/** Posts `count` events for `users` users in order, one request of 10 at a time (`pauseMs` apart), retrying a 503 as an SDK does. */
async function sequentialProducer(
  url: string,
  prefix: string,
  count: number,
  users: number,
  accepted: string[] = [],
  pauseMs = 0,
): Promise<{ accepted: string[]; refusals: number }> {
  let refusals = 0;
  for (let start = 0; start < count; start += 10) {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    const batch = Array.from({ length: 10 }, (_, offset) => ({
      type: "track",
      userId: `${prefix}-${(start + offset) % users}`,
      event: "Ordered",
      messageId: `${prefix}-${start + offset}`,
      properties: { index: start + offset },
    }));
    for (;;) {
      const answer = await post(url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") }).catch(() => ({
        status: 0,
        headers: new Headers(),
      }));
      if (answer.status === 200) break;
      refusals += 1;
      if (answer.status === 503) expect(answer.headers.get("retry-after")).toBe("5");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    accepted.push(...batch.map((event) => event.messageId));
  }
  return { accepted, refusals };
}

function expectInOrder(byUser: Map<string, number[]>, prefix: string): void {
  for (const [user, indexes] of byUser) if (user.startsWith(prefix)) expect(indexes, user).toEqual([...indexes].sort((a, b) => a - b));
}

describe.skipIf(!redisAvailable)("wh serve --queue redis:// (a real redis-server)", () => {
  it("three processes take a burst; a forwarder killed with kill -9 mid-burst loses nothing, its partitions are taken over, each user's order kept", async () => {
    const url = freshQueue();
    const hook = await receiver({ replies: () => ({ status: 200, delayMs: 2 }) });
    const args = ["--queue", url, "--partitions", "16", "--url", hook.url, "--concurrency", "4"];
    const [a, b, c] = [await serve(args), await serve(args), await serve(args, spawnWh)];
    // The three share the 16 partitions: each at most ceil(16 / 3) = 6, none left out.
    const owners = async (processes = [a, b, c]): Promise<number[][]> =>
      Promise.all(processes.map(async (process) => ((await (await fetch(`${process.url}/health`)).json()) as { queue: { owned: number[] } }).queue.owned));
    // C's share is taken from the very reading that found the partitions shared: a second reading
    // could catch a partition still changing hands.
    let cOwned: number[] = [];
    const shared = async (): Promise<boolean> => {
      const owned = await owners();
      const counts = owned.map((partitions) => partitions.length);
      cOwned = owned[2] as number[];
      return counts.every((count) => count >= 1 && count <= 6) && counts.reduce((sum, count) => sum + count, 0) === 16;
    };
    await expect.poll(shared).toBe(true);

    const analytics = new Analytics({ writeKey: "wk", host: b.url, flushAt: 20, flushInterval: 20, maxRetries: 0 });
    const acknowledged = new Set<string>();
    const burst = (async () => {
      for (let index = 0; index < 1_500; index += 1) {
        const messageId = `sdk-${index}`;
        analytics.track({ userId: `sdk-user-${index % 13}`, event: "Burst", messageId }, (error) => {
          if (error === undefined) acknowledged.add(messageId);
        });
        if (index % 20 === 19) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await analytics.closeAndFlush({ timeout: 20_000 });
    })();
    const ordered = sequentialProducer(a.url, "seq", 600, 11);
    await eventually(() => acknowledged.size >= 300, "300 acknowledged events");
    c.child.kill("SIGKILL");
    await c.exited;
    await burst;
    const { accepted } = await ordered;

    const seen = arrivals(hook.requests);
    const expected = [...acknowledged, ...accepted];
    await eventually(() => expected.every((id) => seen().ids.has(id)), "every accepted event delivered");
    expectInOrder(seen().byUser, "seq-");
    // C's partitions come to belong to A and B once C's leases lapse and a tick of A or B takes
    // them: under load that can be after every event was delivered, so wait for it.
    const leftByC = async (): Promise<number[]> => {
      const after = (await owners([a, b])).flat();
      return cOwned.filter((partition) => !after.includes(partition));
    };
    await expect.poll(leftByC).toEqual([]);
    const metrics = await (await fetch(`${a.url}/metrics`)).text();
    expect(metrics).toMatch(/^wh_serve_partition_lag\{partition="0"\} \d+$/m);
    expect(metrics).toMatch(/^wh_serve_partition_owner\{partition="\d+",owner="[^"]+"\} 1$/m);
  });

  it("while Redis restarts, accepting answers 503 with Retry-After and forwarding pauses; afterwards every accepted event is delivered, in order", async () => {
    const url = freshQueue();
    const hook = await receiver();
    const wh = await serve(["--queue", url, "--partitions", "4", "--url", hook.url]);
    const progress: string[] = [];
    const producing = sequentialProducer(wh.url, "r", 800, 7, progress, 5);
    const seen = arrivals(hook.requests);
    // The restart comes while the producer is still sending (it has 800 to send, 10 every 5 ms at most).
    await eventually(() => seen().ids.size >= 50 && progress.length >= 100, "the first deliveries");
    expect(progress.length).toBeLessThan(800);
    await redis.restart(1_500);
    const { accepted, refusals } = await producing;
    expect(refusals).toBeGreaterThan(0);
    await eventually(() => accepted.every((id) => seen().ids.has(id)), "every accepted event delivered");
    expectInOrder(seen().byUser, "r-");
    expect(wh.stderr()).toContain("Redis");
  });

  it("splits accepting and forwarding between processes (--role accept, --role forward)", async () => {
    const url = freshQueue();
    const hook = await receiver();
    const accepting = await serve(["--queue", url, "--partitions", "4", "--url", hook.url, "--role", "accept"]);
    const forwarding = await serve(["--queue", url, "--url", hook.url, "--role", "forward"]);
    const refused = await post(forwarding.url, "/v1/track", JSON.stringify({ userId: "u1", event: "E" }), { authorization: basic("wk") });
    expect(refused).toMatchObject({ status: 404, json: { message: expect.stringContaining("--role forward") } });
    for (const event of ["One", "Two", "Three"])
      expect((await post(accepting.url, "/v1/track", JSON.stringify({ userId: "u1", event }), { authorization: basic("wk") })).status).toBe(200);
    await eventually(() => hook.requests.length === 3, "three deliveries");
    expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(["One", "Two", "Three"]);
    const owned = async (process: ServeProcess): Promise<number[]> =>
      ((await (await fetch(`${process.url}/health`)).json()) as { queue: { owned: number[] } }).queue.owned;
    expect(await owned(accepting)).toEqual([]);
    expect(await owned(forwarding)).toEqual([0, 1, 2, 3]);
  });

  it("dead letters go to a stream that wh serve dead-letters lists and replays", async () => {
    const url = freshQueue();
    let healed = false;
    const hook = await receiver({ replies: (request) => (!healed && request.body.toString().includes("Poison") ? 400 : 200) });
    const wh = await serve(["--queue", url, "--partitions", "2", "--url", hook.url]);
    for (const event of ["Fine", "Poison", "Poison"])
      expect((await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event }), { authorization: basic("wk") })).status).toBe(200);
    const listed = async (): Promise<string[]> => lines((await run(["--json", "serve", "dead-letters", "list", "--queue", url])).stdout);
    await expect.poll(listed).toHaveLength(2);
    const letters = (await listed()).map((line) => JSON.parse(line) as { id: string; outcome: string; reason: string; event: { event: string } });
    expect(letters.map((letter) => [letter.outcome, letter.event.event])).toEqual([
      ["failed", "Poison"],
      ["failed", "Poison"],
    ]);
    expect(letters[0]?.reason).toContain("HTTP 400");
    const human = await run(["serve", "dead-letters", "list", "--queue", url]);
    expect(human.code).toBe(0);
    expect(human.stderr).toContain("2 dead letters");

    healed = true;
    const one = await run(["serve", "dead-letters", "replay", "--queue", url, "--id", letters[0]?.id as string]);
    expect(one).toMatchObject({ code: 0, stdout: expect.stringContaining("1 dead letter put back") });
    const unknown = await run(["serve", "dead-letters", "replay", "--queue", url, "--id", "0-1"]);
    expect(unknown.code).toBe(2);
    expect((await run(["serve", "dead-letters", "replay", "--queue", url])).code).toBe(0);
    // Two failed attempts, then the two replayed deliveries.
    await eventually(() => signedBodies(hook.requests).filter((body) => body.event === "Poison").length === 4, "the replayed events");
    expect(await listed()).toEqual([]);
    expect(wh.stderr()).toContain("failed");
  });

  it("dead-letters list and replay page through a dead-letter stream larger than their heap, and replay moves every letter once", async () => {
    const url = freshQueue();
    const client = createClient({ url });
    await client.connect();
    try {
      await client.hSet("wh:serve:meta", "partitions", "4");
      const padding = "x".repeat(2_000);
      const COUNT = 30_000;
      for (let start = 0; start < COUNT; start += 1_000) {
        const multi = client.multi();
        for (let index = start; index < start + 1_000; index += 1) {
          const event = { type: "track", userId: `u${index % 7}`, event: "Big", messageId: `m-${index}`, properties: { padding } };
          multi.xAdd("wh:serve:dead-letters", "*", {
            record: JSON.stringify({ line: 0, outcome: "failed", reason: "HTTP 500", at: "2026-11-21T09:30:09.000Z" }),
            entry: JSON.stringify({ source: null, event }),
            partition: String(index % 4),
          });
        }
        await multi.exec();
      }
      // About 65 MB of letters; a 40 MB heap holds neither the stream's entries nor its letters.
      const env = { NODE_OPTIONS: "--max-old-space-size=40" };
      const listing = await run(["serve", "dead-letters", "list", "--queue", url], { env });
      expect(listing.code).toBe(0);
      expect(lines(listing.stdout)).toHaveLength(COUNT);
      expect(listing.stderr).toContain(`${COUNT} dead letters`);
      const replay = await run(["--json", "serve", "dead-letters", "replay", "--queue", url], { env });
      expect(replay.code).toBe(0);
      expect(JSON.parse(replay.stdout)).toEqual({ replayed: COUNT });
      expect(await client.xLen("wh:serve:dead-letters")).toBe(0);
      const moved = await Promise.all([0, 1, 2, 3].map((partition) => client.xLen(`wh:serve:p:${partition}`)));
      expect(moved).toEqual([COUNT / 4, COUNT / 4, COUNT / 4, COUNT / 4]);
    } finally {
      await client.destroy();
    }
  }, 120_000);

  it("a dead letter leaves its partition: a restart does not deliver it again, and dead-letters replay delivers it once", async () => {
    const url = freshQueue();
    let healed = false;
    const hook = await receiver({ replies: (request) => (!healed && request.body.toString().includes("Poison") ? 400 : 200) });
    const args = ["--queue", url, "--partitions", "2", "--url", hook.url];
    const first = await serve(args);
    for (const event of ["Fine", "Poison", "Poison"])
      expect((await post(first.url, "/v1/track", JSON.stringify({ userId: "u1", event }), { authorization: basic("wk") })).status).toBe(200);
    const client = createClient({ url });
    await client.connect();
    const keys = new QueueKeys("wh:serve");
    try {
      const waiting = async (): Promise<number[]> => {
        const counts: number[] = [];
        for (const partition of [0, 1]) {
          const stream = keys.stream(partition);
          counts.push(await client.xLen(stream));
          counts.push((await client.exists(stream)) === 1 ? Number((await client.xPending(stream, "forwarders")).pending) : 0);
        }
        return counts;
      };
      const deadLetters = async (): Promise<number> =>
        (await Promise.all([0, 1].map((partition) => client.xLen(keys.deadLetters(partition))))).reduce((a, b) => a + b);
      await expect.poll(async () => (await deadLetters()) === 2 && (await waiting()).every((count) => count === 0)).toBe(true);
      await first.stop();
      const poisoned = (): number => signedBodies(hook.requests).filter((body) => body.event === "Poison").length;
      expect(poisoned()).toBe(2);
      const second = await serve(args);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(poisoned()).toBe(2);
      healed = true;
      expect((await run(["serve", "dead-letters", "replay", "--queue", url])).code).toBe(0);
      await eventually(() => poisoned() === 4, "the two replayed events");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(poisoned()).toBe(4);
      expect(await waiting()).toEqual([0, 0, 0, 0]);
      expect(second.stderr()).not.toMatch(/Redis:/);
    } finally {
      await client.destroy();
    }
  });

  it("an entry that is not wh's is dead-lettered on its own with its raw fields while its neighbours arrive, and dead-letters list shows it as unreadable", async () => {
    const url = freshQueue();
    const hook = await receiver();
    const client = createClient({ url });
    await client.connect();
    try {
      await client.hSet("wh:serve:meta", "partitions", "1");
      await client.xAdd("wh:serve:p:0", "*", { foo: "bar" });
      await client.xAdd("wh:serve:p:0", "*", { r: "not json" });
      const wh = await serve(["--queue", url, "--url", hook.url]);
      for (const event of ["One", "Two"])
        expect((await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event }), { authorization: basic("wk") })).status).toBe(200);
      await eventually(() => hook.requests.length >= 2, "the two good events");
      expect(signedBodies(hook.requests).map((body) => body.event)).toEqual(["One", "Two"]);
      await expect.poll(async () => client.xLen("wh:serve:dead-letters")).toBe(2);
      // The last delivery's acknowledgement is written at the next commit.
      await expect.poll(async () => client.xLen("wh:serve:p:0")).toBe(0);
      expect(wh.stderr()).not.toMatch(/Redis:/);
      const listed = await run(["--json", "serve", "dead-letters", "list", "--queue", url]);
      expect(listed.code).toBe(0);
      const letters = lines(listed.stdout).map((line) => JSON.parse(line) as { outcome: string; unreadable?: string });
      expect(letters.map((letter) => [letter.outcome, letter.unreadable])).toEqual([
        ["unreadable", '{"foo":"bar"}'],
        ["unreadable", "not json"],
      ]);
      await client.xAdd("wh:serve:dead-letters", "*", { stranger: "yes" });
      const human = await run(["serve", "dead-letters", "list", "--queue", url]);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain("(unreadable entry)");
      expect(human.stderr).toContain("3 dead letters");
    } finally {
      await client.destroy();
    }
  });

  it("with --ui, the page's stream shows each accepted event once, with its deliveries", async () => {
    const url = freshQueue();
    const hook = await receiver();
    const wh = await serve(["--queue", url, "--partitions", "2", "--url", hook.url, "--ui"]);
    const inspector = lines(await wh.waitForStdout((text) => text.includes('"inspector"')))
      .map((line) => JSON.parse(line) as { inspector?: string })
      .find((record) => record.inspector !== undefined)?.inspector as string;
    for (const user of ["u1", "u2"])
      expect((await post(wh.url, "/v1/track", JSON.stringify({ userId: user, event: "Paged" }), { authorization: basic("wk") })).status).toBe(200);
    await eventually(() => hook.requests.length === 2, "two deliveries");
    const controller = new AbortController();
    const response = await fetch(`${inspector}events`, { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    const entries = new Map<number, { user: string; deliveries: { text: string }[] }>();
    while (entries.size < 2 || [...entries.values()].some((entry) => entry.deliveries.length === 0)) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
      for (const frame of text.split("\n\n")) {
        const data = /^event: entry\ndata: (.*)$/m.exec(frame)?.[1];
        if (data !== undefined) {
          const entry = JSON.parse(data) as { id: number; user: string; deliveries: { text: string }[] };
          entries.set(entry.id, entry);
        }
      }
    }
    controller.abort();
    expect([...entries.values()].map((entry) => entry.user).sort()).toEqual(["u1", "u2"]);
    for (const entry of entries.values()) expect(entry.deliveries[0]?.text).toMatch(/^attempt 1 to .*: HTTP 200/);
  });

  it("dead-letters list and replay of a queue with a password never print it, human or --json", async () => {
    const guarded = await startRedis(["--requirepass", "pa55-in-the-url"]);
    try {
      const url = guarded.url.replace("redis://", "redis://:pa55-in-the-url@");
      for (const args of [
        ["serve", "dead-letters", "list", "--queue", url],
        ["--json", "serve", "dead-letters", "list", "--queue", url],
        ["serve", "dead-letters", "replay", "--queue", url],
        ["--json", "serve", "dead-letters", "replay", "--queue", url],
        ["serve", "dead-letters", "replay", "--queue", url, "--id", "0-1"],
      ]) {
        const result = await runInProcess(args);
        expect(`${result.stdout}${result.stderr}`, args.join(" ")).not.toContain("pa55-in-the-url");
      }
      const listed = await runInProcess(["serve", "dead-letters", "list", "--queue", url]);
      expect(listed).toMatchObject({ code: 0, stderr: expect.stringMatching(/0 dead letters in redis:\/\/:\*+@127\.0\.0\.1:\d+/) });
    } finally {
      await guarded.stop();
    }
  });

  it("refuses a partition count other than the queue's, --role without --queue, and an unreachable Redis (exit 2)", async () => {
    const url = freshQueue();
    const hook = await receiver();
    await serve(["--queue", url, "--partitions", "8", "--url", hook.url]);
    const other = await run(["serve", "--port", "0", "--queue", url, "--partitions", "16", "--url", hook.url], { env: { WH_SHARED_SECRET: SECRET } });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("has 8 partitions");
    const role = await run(["serve", "--port", "0", "--role", "forward", "--url", hook.url]);
    expect(role.code).toBe(2);
    expect(role.stderr).toContain("--role needs --queue");
    const away = await run(["serve", "--port", "0", "--queue", "redis://127.0.0.1:1", "--url", hook.url]);
    expect(away.code).toBe(2);
    expect(away.stderr).toContain("cannot connect to Redis");
    // A password Redis does not take: refused, and the password never printed.
    const guarded = await startRedis(["--requirepass", "the-right-one"]);
    try {
      const refused = await run(["serve", "--port", "0", "--queue", guarded.url.replace("redis://", "redis://:hunter2-secret@"), "--url", hook.url]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--queue redis:\/\/:\*+@127\.0\.0\.1:\d+: /);
      expect(`${refused.stdout}${refused.stderr}`).not.toContain("hunter2-secret");
    } finally {
      await guarded.stop();
    }
  });
});
