import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "./run-wh.js";
import { basic, eventually, post, signedBodies, startServe } from "./serve-helpers.js";

// wh serve with many sources over one spool: each source's reader passes over the others' records
// by their first bytes (spool-store.ts sourceSelector), from the files and as they are committed.

const receiver = closedAfterEach();
afterAll(removeTempDirs);

const SOURCES = 100;

/** One batch per source, `count` events each, posted with the source's write key; their messageIds. */
async function postSpread(url: string, round: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: SOURCES }, async (_, source) => {
      const batch = Array.from({ length: count }, (_, n) => {
        const messageId = `${round}-${source}-${n}`;
        ids.push(messageId);
        return { type: "track", userId: `u${n}`, event: "Spread", messageId, properties: { source } };
      });
      const answer = await post(url, "/v1/batch", JSON.stringify({ batch }), { "content-type": "application/json", authorization: basic(`wk-${source}`) });
      expect(answer.status).toBe(200);
    }),
  );
  return ids;
}

describe("wh serve with 100 sources", () => {
  it("delivers every event to its own source's webhook once, read back from the spool after a restart and as it is accepted, with no listener warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on("warning", onWarning);
    let down = true;
    const hook = await receiver({ replies: () => (down ? 503 : 200) });
    const dir = await makeTempDir();
    const sources = Object.fromEntries(
      Array.from({ length: SOURCES }, (_, source) => [`s${source}`, { writeKey: `wk-${source}`, webhooks: [{ url: `${hook.url}/s${source}` }] }]),
    );
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sources }));
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
});
