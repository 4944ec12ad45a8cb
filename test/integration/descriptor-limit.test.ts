// Spawned: the descriptor limit is set on a child process with prlimit.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { builtBin, cleanEnv, makeTempDir, removeTempDirs, ROOT } from "../helpers/run-wh.js";
import { tracked } from "../helpers/children.js";

/**
 * Under a low descriptor limit (`ulimit -n 1024`, set on the child with prlimit) the client and
 * the delivery engine must wait for sockets, never count a local EMFILE as a final failure.
 */
const prlimit = spawnSync("prlimit", ["--version"]).status === 0;
if (!prlimit && process.env.WH_REQUIRE_SERVICES === "1") throw new Error("WH_REQUIRE_SERVICES=1 but prlimit (util-linux) cannot be run");
if (!prlimit) process.stderr.write("descriptor-limit tests skipped: prlimit (util-linux) cannot be run here\n");

const receiver = closedAfterEach();
afterAll(removeTempDirs);

async function underLimit(args: readonly string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = tracked(spawn("prlimit", ["--nofile=1024:1024", process.execPath, ...args], { cwd, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] }));
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stdout, stderr };
}

describe.skipIf(!prlimit)("under ulimit -n 1024", () => {
  it("the Analytics client delivers 100,000 calls and close() reports nothing unsent", async () => {
    const hook = await receiver({ replies: () => ({ status: 200, delayMs: 5 }) });
    const dir = await makeTempDir();
    const script = join(dir, "client.mjs");
    await writeFile(
      script,
      `import { Analytics } from ${JSON.stringify(join(ROOT, "dist", "index.js"))};
const analytics = new Analytics({ writeKey: "wk", endpoint: ${JSON.stringify(hook.url)} });
let failures = 0;
analytics.on("failure", () => (failures += 1));
for (let index = 0; index < 100000; index += 1) analytics.track({ userId: "u" + (index % 100), event: "Limited", messageId: "m-" + index });
const { unsent } = await analytics.close({ timeoutMs: 120000 });
console.log(JSON.stringify({ unsent: unsent.length, failures }));
`,
    );
    const result = await underLimit([script], dir);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({ unsent: 0, failures: 0 });
    const ids = new Set<string>();
    for (const request of hook.requests)
      for (const event of (JSON.parse(request.body.toString()) as { batch: { messageId: string }[] }).batch) ids.add(event.messageId);
    expect(ids.size).toBe(100_000);
  });

  it("wh replay --concurrency 2048 delivers every event, retrying EMFILE instead of dead-lettering it", async () => {
    const hook = await receiver({ replies: () => ({ status: 200, delayMs: 30 }) });
    const dir = await makeTempDir();
    const events = Array.from({ length: 20_000 }, (_, index) =>
      JSON.stringify({ type: "track", userId: `u${index}`, event: "Limited", messageId: `r-${index}` }),
    );
    await writeFile(join(dir, "events.ndjson"), `${events.join("\n")}\n`);
    const result = await underLimit([builtBin(), "--json", "replay", "events.ndjson", "--url", hook.url, "--concurrency", "2048", "--ordered", "none"], dir);
    expect(result.code, result.stderr.slice(-2_000)).toBe(0);
    const summary = JSON.parse(result.stdout.trim().split("\n").at(-1) as string) as { delivered: number; failed: number };
    expect(summary).toMatchObject({ delivered: 20_000, failed: 0 });
    expect(new Set(hook.requests.map((request) => (JSON.parse(request.body.toString()) as { messageId: string }).messageId)).size).toBe(20_000);
  });
});
