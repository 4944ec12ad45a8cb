import { readFileSync } from "node:fs";
import { readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordedRequest } from "../../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";
import { basic, eventually, post, signedBodies, startServe } from "./serve-helpers.js";

// wh serve with many sources over one spool: one reader hands each record to its source's lane
// (adapters/spool/fanout.ts), from the files and as they are committed; a source that does not keep
// up reads alone from where it fell behind, passing over the others' records by their first bytes.

const receiver = closedAfterEach();
afterAll(removeTempDirs);

const SOURCES = 100;

/** One batch per source of `sources`, `count` events each, posted with the source's write key; their messageIds. */
async function postSpread(url: string, round: string, count: number, sources = Array.from({ length: SOURCES }, (_, source) => source)): Promise<string[]> {
  const ids: string[] = [];
  await Promise.all(
    sources.map(async (source) => {
      const batch = Array.from({ length: count }, (_, n) => {
        const messageId = `${round}-${source}-${n}`;
        ids.push(messageId);
        return { type: "track", userId: `u${n % 7}`, event: "Spread", messageId, properties: { source, n } };
      });
      const answer = await post(url, "/v1/batch", JSON.stringify({ batch }), { "content-type": "application/json", authorization: basic(`wk-${source}`) });
      expect(answer.status).toBe(200);
    }),
  );
  return ids;
}

/** A config of SOURCES sources, source i's webhook at /s<i> of `hook`. */
async function writeSources(dir: string, hook: string): Promise<void> {
  const sources = Object.fromEntries(
    Array.from({ length: SOURCES }, (_, source) => [`s${source}`, { writeKey: `wk-${source}`, webhooks: [{ url: `${hook}/s${source}` }] }]),
  );
  await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sources }));
}

/** Bytes this process has read through read(2) and its kin, files and sockets alike (Linux); undefined elsewhere. */
function bytesRead(): number | undefined {
  try {
    return Number(/^rchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))?.[1]);
  } catch {
    return undefined;
  }
}

describe("wh serve with 100 sources", () => {
  it("delivers every event to its own source's webhook once, read back from the spool after a restart and as it is accepted, with no listener warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on("warning", onWarning);
    let down = true;
    const hook = await receiver({ replies: () => (down ? 503 : 200) });
    const dir = await makeTempDir();
    await writeSources(dir, hook.url);
    // Webhooks down: everything accepted waits in the spool, and the next run reads it from the files.
    const first = await startServe([], { cwd: dir });
    const backlog = await postSpread(first.url, "backlog", 3);
    await first.stop();
    down = false;
    hook.requests.length = 0;
    const second = await startServe([], { cwd: dir });
    try {
      const live = await postSpread(second.url, "live", 2);
      const expected = [...backlog, ...live];
      await eventually(() => hook.requests.length >= expected.length, "every event delivered");
      await new Promise((resolve) => setTimeout(resolve, 200));
      const bodies = signedBodies(hook.requests);
      const delivered = bodies.map((body, index) => ({
        messageId: body.messageId as string,
        path: hook.requests[index]?.path,
        source: (body.properties as { source: number }).source,
      }));
      for (const { path, source } of delivered) expect(path).toBe(new URL(`${hook.url}/s${source}`).pathname);
      expect(delivered.map(({ messageId }) => messageId).sort()).toEqual(expected.sort());
    } finally {
      await second.stop();
      process.off("warning", onWarning);
    }
    // One listener per source on the command's signal passed Node's 10.
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  }, 60_000);

  it.skipIf(bytesRead() === undefined)(
    "reads the spool's files once for all the sources, not once per source",
    async () => {
      let down = true;
      const hook = await receiver({ replies: () => (down ? 503 : 200) });
      const dir = await makeTempDir();
      await writeSources(dir, hook.url);
      const first = await startServe([], { cwd: dir });
      const backlog = await postSpread(first.url, "backlog", 20);
      await first.stop();
      const spool = join(dir, ".wh", "serve", "spool");
      const files = (await readdir(spool)).filter((name) => name.endsWith(".ndjson"));
      const spoolBytes = (await Promise.all(files.map(async (name) => (await stat(join(spool, name))).size))).reduce((sum, size) => sum + size, 0);
      down = false;
      hook.requests.length = 0;
      const before = bytesRead() as number;
      const second = await startServe([], { cwd: dir });
      try {
        await eventually(() => hook.requests.length >= backlog.length, "every event delivered");
      } finally {
        await second.stop();
      }
      // Recovery scans the files once, the forwarders read them once more; the rest is the webhook's
      // requests and the answers (about a record's bytes each). A reader per source read them 100 times.
      expect((bytesRead() as number) - before).toBeLessThan(10 * spoolBytes);
    },
    120_000,
  );

  it("a source whose webhook is down falls behind and reads its backlog alone, then is fed again: every event once, each user's in order", async () => {
    const slow = [0, 41, 99];
    let down = true;
    const answered: RecordedRequest[] = [];
    const hook = await receiver({
      replies: (request) => {
        if (down && slow.some((source) => request.path.endsWith(`/s${source}`))) return { status: 503, headers: { "retry-after": "1" } };
        answered.push(request);
        return 200;
      },
    });
    const dir = await makeTempDir();
    await writeSources(dir, hook.url);
    const serve = await startServe([], { cwd: dir });
    try {
      // More than a lane holds (256) beyond what its runner holds, for the sources that are down.
      const expected: string[] = [];
      for (let round = 0; round < 4; round += 1) {
        expected.push(...(await postSpread(serve.url, `behind${round}`, 100, slow)));
        expected.push(...(await postSpread(serve.url, `fed${round}`, 2)));
      }
      const fed = 4 * 2 * (SOURCES - slow.length);
      await eventually(() => answered.length >= fed, "the other sources' events delivered");
      down = false;
      // Back: the fallen-behind sources read their backlog alone, then are fed with the rest again.
      expected.push(...(await postSpread(serve.url, "after", 3)));
      await eventually(() => answered.length >= expected.length, "every event delivered");
      await new Promise((resolve) => setTimeout(resolve, 200));
      const bodies = signedBodies(answered).map((body, index) => ({ body, path: answered[index]?.path }));
      expect(bodies.map(({ body }) => body.messageId as string).sort()).toEqual(expected.sort());
      const seen = new Map<string, number>();
      for (const { body, path } of bodies) {
        const { source, n } = body.properties as { source: number; n: number };
        expect(path).toBe(new URL(`${hook.url}/s${source}`).pathname);
        // Each user's events of a source in the order they were posted: rounds in turn, n within one.
        const round = String(body.messageId).split("-")[0] as string;
        const order = ["behind0", "fed0", "behind1", "fed1", "behind2", "fed2", "behind3", "fed3", "after"].indexOf(round) * 1_000 + n;
        const user = `${source}/${String(body.userId)}`;
        expect(order).toBeGreaterThan(seen.get(user) ?? -1);
        seen.set(user, order);
      }
    } finally {
      await serve.stop();
    }
  }, 120_000);
});
