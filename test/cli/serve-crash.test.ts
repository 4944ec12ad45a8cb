import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Analytics } from "@segment/analytics-node";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "./run-wh.js";
import { basic, eventually, post, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
const mounts: string[] = [];
afterAll(async () => {
  await Promise.all(running.map((serve) => serve.stop()));
  for (const mount of mounts) execFileSync("umount", [mount]);
  await removeTempDirs();
});

async function serve(args: readonly string[], cwd: string): Promise<ServeProcess> {
  const process = await startServe(args, { cwd });
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
    await eventually(() => acknowledged.size >= 600, 20_000, "600 acknowledged events");
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
    await eventually(() => [...acknowledged].every((id) => delivered().has(id)), 40_000, "every acknowledged event delivered");
    const recovered = JSON.parse(second.stdout().split("\n")[0] as string) as { recovered: number };
    expect(recovered.recovered).toBeGreaterThan(0);
    // Nothing delivered that was never accepted, and duplicates only for deliveries in flight at the kill.
    for (const id of delivered()) expect(id).toMatch(/^burst-\d+$/);
    // Duplicates only for the deliveries in flight at the kill (at most --concurrency of them).
    expect(hook.requests.length - delivered().size).toBeLessThanOrEqual(2);
  }, 90_000);

  it("a full disk is answered 503 with Retry-After, and what was answered 200 is delivered", async (context) => {
    const dir = await makeTempDir();
    const disk = join(dir, "disk");
    await mkdir(disk);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], { stdio: "pipe" });
      mounts.push(disk);
    } catch (error) {
      process.stderr.write(`serve-crash: the full-disk case is skipped: cannot mount a tmpfs here (${(error as Error).message.split("\n")[0]})\n`);
      return context.skip("cannot mount a tmpfs here");
    }
    const down = await receiver({ replies: [503] });
    const wh = await serve(["--url", down.url, "--data-dir", join(disk, "serve"), "--retry-window", "1h"], dir);
    const statuses: number[] = [];
    const accepted: string[] = [];
    for (let index = 0; index < 200 && !statuses.includes(503); index += 1) {
      const messageId = `fill-${index}`;
      const answer = await post(wh.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Fill", messageId, properties: { pad: "x".repeat(1_000) } }), { authorization: basic("wk") });
      statuses.push(answer.status);
      if (answer.status === 200) accepted.push(messageId);
      else {
        expect(answer.status).toBe(503);
        expect(answer.headers.get("retry-after")).toBe("5");
        expect(answer.json.message).toMatch(/no space left|ENOSPC/i);
      }
    }
    expect(statuses.at(-1)).toBe(503);
    await wh.stop();
    // The same spool, a receiver that answers: exactly the accepted events arrive.
    const up = await receiver();
    await serve(["--url", up.url, "--data-dir", join(disk, "serve")], dir);
    await eventually(() => up.requests.length >= accepted.length, 20_000, "the accepted events");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(signedBodies(up.requests).map((body) => body.messageId)).toEqual(accepted);
  });
});
