// Spawned: kill -9 and restarts are the process's; the spool's files survive them.
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Analytics } from "@segment/analytics-node";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { mountTmpfs } from "../../helpers/tmpfs.js";
import { makeTempDir, removeTempDirs, spawnWh } from "../../helpers/run-wh.js";
import { basic, eventually, post, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
const unmounts: (() => void)[] = [];
afterAll(async () => {
  await Promise.all(running.map((serve) => serve.stop()));
  for (const unmount of unmounts) unmount();
  await removeTempDirs();
});

async function serve(args: readonly string[], cwd: string): Promise<ServeProcess> {
  const process = await startServe(args, { cwd }, spawnWh);
  running.push(process);
  return process;
}

describe("wh serve loses nothing it answered 200", () => {
  it("kill -9 during a burst from @segment/analytics-node, then a restart: every acknowledged event is delivered", async () => {
    const dir = await makeTempDir();
    // A slow receiver keeps events in the spool when the kill comes.
    const hook = await receiver({ replies: () => ({ status: 200, delayMs: 3 }) });
    const first = await serve(["--url", hook.url, "--concurrency", "2"], dir);
    const analytics = new Analytics({ writeKey: "wk", host: first.url, flushAt: 25, flushInterval: 20, maxRetries: 0 });
    const acknowledged = new Set<string>();
    let killed = false;
    // The app keeps calling the SDK, a few events at a time, while wh serve is killed under it.
    const burst = (async () => {
      for (let index = 0; index < 4_000; index += 1) {
        const messageId = `burst-${index}`;
        analytics.track({ userId: `user-${index % 17}`, event: "Burst", properties: { index }, messageId }, (error) => {
          if (error === undefined) acknowledged.add(messageId);
        });
        if (index % 25 === 24) await new Promise((resolve) => setTimeout(resolve, 5));
        if (killed && index % 25 === 24 && index > 3_000) break;
      }
    })();
    await eventually(() => acknowledged.size >= 600, "600 acknowledged events");
    first.child.kill("SIGKILL");
    killed = true;
    await first.exited;
    await burst;
    // What the SDK sends now fails (no retries): only what was answered 200 must arrive.
    await analytics.closeAndFlush({ timeout: 10_000 });
    const seen = new Set<string>();
    let read = 0;
    const delivered = (): Set<string> => {
      for (const body of signedBodies(hook.requests.slice(read))) seen.add(body.messageId as string);
      read = hook.requests.length;
      return seen;
    };
    expect(acknowledged.size).toBeLessThan(4_000);
    expect(delivered().size).toBeLessThan(acknowledged.size);

    const second = await serve(["--url", hook.url, "--concurrency", "8"], dir);
    await eventually(() => [...acknowledged].every((id) => delivered().has(id)), "every acknowledged event delivered");
    const recovered = JSON.parse(second.stdout().split("\n")[0] as string) as { recovered: number };
    expect(recovered.recovered).toBeGreaterThan(0);
    // Nothing delivered that was never accepted, and duplicates only for deliveries in flight at the kill.
    for (const id of delivered()) expect(id).toMatch(/^burst-\d+$/);
    // Duplicates only for the deliveries in flight at the kill (at most --concurrency of them).
    expect(hook.requests.length - delivered().size).toBeLessThanOrEqual(2);
  });

  it("a full disk mid-burst is answered 503 with Retry-After; once space is back it accepts again, and after a restart every event answered 200 is delivered once", async () => {
    const dir = await makeTempDir();
    const disk = mountTmpfs(256 * 1024);
    if (typeof disk === "string") return;
    unmounts.push(disk.unmount);
    const filler = join(disk.dir, "filler");
    writeFileSync(filler, Buffer.alloc(180 * 1024, 1));
    const down = await receiver({ replies: [503] });
    const wh = await serve(["--url", down.url, "--data-dir", join(disk.dir, "serve"), "--retry-window", "1h"], dir);
    const accepted: string[] = [];
    let refused = 0;
    let next = 0;
    // Bursts of concurrent requests, as an app's SDKs send them: some writes are cut short by the full disk.
    const burst = async (size: number): Promise<void> => {
      const answers = await Promise.all(
        Array.from({ length: size }, async () => {
          const messageId = `fill-${next++}`;
          const body = JSON.stringify({ userId: `u${next % 5}`, event: "Fill", messageId, properties: { pad: "x".repeat(900) } });
          return { messageId, answer: await post(wh.url, "/v1/track", body, { authorization: basic("wk") }) };
        }),
      );
      for (const { messageId, answer } of answers) {
        if (answer.status === 200) accepted.push(messageId);
        else {
          expect(answer.status).toBe(503);
          expect(answer.headers.get("retry-after")).toBe("5");
          expect(answer.json.message).toMatch(/no space left|ENOSPC/i);
          refused += 1;
        }
      }
    };
    for (let round = 0; round < 40 && refused < 8; round += 1) await burst(8);
    expect(refused).toBeGreaterThan(0);
    rmSync(filler);
    const before = accepted.length;
    await burst(8);
    await burst(8);
    expect(accepted.length - before).toBe(16);
    await wh.stop();
    // The same spool, a receiver that answers: exactly the accepted events arrive, each once.
    const up = await receiver();
    await serve(["--url", up.url, "--data-dir", join(disk.dir, "serve")], dir);
    await eventually(() => up.requests.length >= accepted.length, "the accepted events");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const delivered = signedBodies(up.requests).map((body) => body.messageId as string);
    expect(delivered.length).toBe(accepted.length);
    expect(new Set(delivered)).toEqual(new Set(accepted));
  });

  it("keeps the acks of records past the first segment through two kill -9 restarts: nothing delivered is sent again", async () => {
    const dir = await makeTempDir();
    const dataDir = join(dir, "data");
    const hook = await receiver();
    const args = ["--url", hook.url, "--data-dir", dataDir, "--concurrency", "64"];
    const first = await serve(args, dir);
    // 25,000 events: three segments of the spool (10,000 records each), the last one open.
    const batches = Array.from({ length: 250 }, (_, batch) =>
      Array.from({ length: 100 }, (_, index) => ({ type: "track", userId: `u${index % 20}`, event: "Segmented", messageId: `s-${batch * 100 + index}` })),
    );
    for (let start = 0; start < batches.length; start += 10) {
      const answers = await Promise.all(
        batches.slice(start, start + 10).map((batch) => post(first.url, "/v1/batch", JSON.stringify({ batch }), { authorization: basic("wk") })),
      );
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    }
    await eventually(() => hook.requests.length >= 25_000, "the 25,000 events");
    // The acks of the last deliveries are written within a turn of the loop.
    await new Promise((resolve) => setTimeout(resolve, 300));
    first.child.kill("SIGKILL");
    await first.exited;
    for (const round of [1, 2]) {
      const again = await serve(args, dir);
      expect(JSON.parse(again.stdout().split("\n")[0] as string)).toMatchObject({ recovered: 0 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(hook.requests.length, `restart ${round}`).toBe(25_000);
      again.child.kill("SIGKILL");
      await again.exited;
    }
    const last = await serve(args, dir);
    expect(
      (await post(last.url, "/v1/track", JSON.stringify({ userId: "u1", event: "After", messageId: "after-1" }), { authorization: basic("wk") })).status,
    ).toBe(200);
    await eventually(() => hook.requests.length === 25_001, "the event after the restarts");
    expect(new Set(signedBodies(hook.requests).map((body) => body.messageId)).size).toBe(25_001);
  });

  it("quarantines an unreadable spool record at start, says so, shows it in /health, and delivers every other event", async () => {
    const dir = await makeTempDir();
    const dataDir = join(dir, "data");
    const down = await receiver({ replies: [503] });
    const first = await serve(["--url", down.url, "--data-dir", dataDir, "--retry-window", "1h"], dir);
    for (const messageId of ["q-1", "q-2"]) {
      expect((await post(first.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Q", messageId }), { authorization: basic("wk") })).status).toBe(200);
    }
    await first.stop();
    const [segment] = readdirSync(join(dataDir, "spool")).filter((name) => name.endsWith(".ndjson"));
    const path = join(dataDir, "spool", segment as string);
    const [one, two] = readFileSync(path, "utf8").split("\n");
    // A line that is not a record, and a hole of NUL bytes before a good one (what older versions left on a full disk).
    writeFileSync(path, `${one}\nnot a record\n${"\0".repeat(40)}${two}\n`);
    const up = await receiver();
    const second = await serve(["--url", up.url, "--data-dir", dataDir], dir);
    await eventually(() => up.requests.length >= 2, "the two good events");
    expect(signedBodies(up.requests).map((body) => body.messageId)).toEqual(["q-1", "q-2"]);
    expect(second.stderr()).toMatch(/1 unreadable record: moved to .*quarantine\.ndjson/);
    const health = (await (await fetch(`${second.url}/health`)).json()) as { spool: { quarantined: { count: number; path: string } } };
    expect(health.spool.quarantined).toEqual({ count: 1, path: join(dataDir, "quarantine.ndjson") });
    const [quarantined] = readFileSync(join(dataDir, "quarantine.ndjson"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { text: string; where: string });
    expect(quarantined).toMatchObject({ text: "not a record", where: `${segment} line 2` });
  });
});
