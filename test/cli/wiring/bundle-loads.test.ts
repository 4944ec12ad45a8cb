import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startRecordingServer } from "../../helpers/recording-server.js";
import { makeTempDir, removeTempDirs, run, spawnWh } from "../../helpers/run-wh.js";

// undici's public entry loads all of it (fetch, WebSocket, caches): about 25 ms of CPU at every
// start. The bundle keeps it in a file of its own (scripts/bundle-cli.mjs), read only by the
// commands that deliver. These tests hold the bundle to that, on the files a command loads.

afterAll(removeTempDirs);

/**
 * A fresh directory and the NODE_OPTIONS that make a wh started there list, as it exits, the
 * files Node's require cache holds; `loaded` reads that list.
 */
async function listingLoads(): Promise<{ cwd: string; nodeOptions: string; loaded: () => Promise<string[]> }> {
  const cwd = await makeTempDir();
  const preload = join(cwd, "list-loaded.cjs");
  const list = join(cwd, "loaded.json");
  await writeFile(
    preload,
    `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(list)}, JSON.stringify(Object.keys(require.cache))));\n`,
  );
  return { cwd, nodeOptions: `--require ${preload}`, loaded: async () => JSON.parse(await readFile(list, "utf8")) as string[] };
}

/** The files `wh …args` loaded (in a directory with `config` as its .whrc.json, if given). */
async function filesLoaded(args: readonly string[], env: Record<string, string> = {}, config?: object): Promise<string[]> {
  const { cwd, nodeOptions, loaded } = await listingLoads();
  if (config !== undefined) await writeFile(join(cwd, ".whrc.json"), JSON.stringify(config));
  await writeFile(join(cwd, "body.json"), '{"type":"track","userId":"u1","event":"Signed Up"}');
  const result = await run(args, { cwd, env: { WH_SHARED_SECRET: "s3cret", NODE_OPTIONS: nodeOptions, ...env } });
  expect(result.stderr).not.toMatch(/internal error/);
  return loaded();
}

/** The files `wh listen …args` loaded until Ctrl-C. */
async function filesListenLoaded(args: readonly string[]): Promise<string[]> {
  const { cwd, nodeOptions, loaded } = await listingLoads();
  const wh = spawnWh(["listen", "--port", "0", ...args], { cwd, env: { NODE_OPTIONS: nodeOptions } });
  await wh.waitForStderr((text) => text.includes("press Ctrl-C"));
  wh.child.kill("SIGINT");
  expect((await wh.exited).code).toBe(0);
  return loaded();
}

const isUndici = (file: string): boolean => /[\\/]undici(\.cjs$|[\\/])/.test(file);
/** Segment's engines (actions-core, FQL) and the module that loads them: only with subscriptions. */
const isSegmentEngine = (file: string): boolean => /[\\/](@segment[\\/]|segment-engines\.cjs$)/.test(file);
/** @segment/tsub, the bundle's file of it or the package: loaded only for a config with destination filters. */
const isTsub = (file: string): boolean => /[\\/](segment-tsub\.cjs$|@segment[\\/]tsub[\\/])/.test(file);
const DRY_SEND = ["send", "track", "--event", "X", "--user-id", "u", "--url", "http://127.0.0.1:9/", "--dry-run"];

/**
 * The bundle's files among `loaded` that hold the package `name`: esbuild names each module it
 * bundles in a comment, `// node_modules/zod/...` (`// ../../main/node_modules/zod/...` when
 * node_modules is a link out of the tree).
 */
async function bundling(loaded: readonly string[], name: string): Promise<string[]> {
  const comment = new RegExp(`^// (?:\\S*/)?node_modules/${name}/`, "m");
  const bundled = [...new Set(loaded.filter((file) => /[\\/]cli-bundle[\\/]/.test(file)))];
  const texts = await Promise.all(bundled.map((file) => readFile(file, "utf8")));
  return bundled.filter((_, index) => comment.test(texts[index] as string));
}

describe("what the bundled CLI loads", () => {
  it("wh sign and wh verify never load undici", async () => {
    const signed = await filesLoaded(["sign", "body.json"]);
    const verified = await filesLoaded(["verify", "--signature", "0".repeat(40), "body.json"]);
    expect(signed.some((file) => file.endsWith("sign.cjs"))).toBe(true);
    expect(signed.filter(isUndici)).toEqual([]);
    expect(verified.filter(isUndici)).toEqual([]);
  });

  it("wh sign and wh verify load no zod (bundled into a file they read, it would be set up at every start)", async () => {
    const loaded = [...(await filesLoaded(["sign", "body.json"])), ...(await filesLoaded(["verify", "--signature", "0".repeat(40), "body.json"]))];
    expect(loaded.filter((file) => /[\\/]cli-bundle[\\/]/.test(file)).length).toBeGreaterThan(1);
    expect(await bundling(loaded, "zod")).toEqual([]);
  });

  it("wh send --dry-run never loads undici: nothing is sent", async () => {
    const loaded = await filesLoaded(DRY_SEND);
    expect(loaded.some((file) => file.endsWith("send.cjs"))).toBe(true);
    expect(loaded.filter(isUndici)).toEqual([]);
  });

  it("wh send loads undici once, from the bundle's own file", async () => {
    const server = await startRecordingServer();
    try {
      const loaded = await filesLoaded(["send", "track", "--user-id", "u1", "--event", "Signed Up", "--url", server.url]);
      expect(server.requests).toHaveLength(1);
      expect(loaded.filter(isUndici).map((file) => file.split(/[\\/]/).slice(-2).join("/"))).toEqual(["cli-bundle/undici.cjs"]);
    } finally {
      await server.close();
    }
  });

  it("wh sign, wh verify and a plain wh send never load Segment's engines; wh send with subscriptions loads them from node_modules", async () => {
    const plain = [
      ...(await filesLoaded(["sign", "body.json"])),
      ...(await filesLoaded(["verify", "--signature", "0".repeat(40), "body.json"])),
      ...(await filesLoaded(["send", "track", "--user-id", "u1", "--event", "Signed Up", "--url", "http://127.0.0.1:9/", "--dry-run"])),
    ];
    expect(plain.filter(isSegmentEngine)).toEqual([]);
    const subscriptions = JSON.stringify([
      { name: "All", actionSlug: "send", enabled: true, trigger: 'type = "track"', settings: { url: "http://127.0.0.1:9/" } },
    ]);
    const cwd = await makeTempDir();
    await writeFile(join(cwd, "subscriptions.json"), subscriptions);
    const routed = await filesLoaded([
      "send",
      "track",
      "--user-id",
      "u1",
      "--event",
      "Signed Up",
      "--subscriptions",
      join(cwd, "subscriptions.json"),
      "--dry-run",
    ]);
    expect(routed.some((file) => file.endsWith("segment-engines.cjs"))).toBe(true);
    expect(routed.some((file) => /[\\/]node_modules[\\/]@segment[\\/]actions-core[\\/]/.test(file))).toBe(true);
  });

  it("wh listen loads Segment's FQL engine only with --filter or --route, and never actions-core", async () => {
    const plain = await filesListenLoaded([]);
    expect(plain.some((file) => file.endsWith("listen.cjs"))).toBe(true);
    expect(plain.filter(isSegmentEngine)).toEqual([]);
    for (const args of [
      ["--filter", 'type = "track"'],
      ["--route", 'type = "track" => http://127.0.0.1:9/'],
    ]) {
      const filtered = await filesListenLoaded(args);
      expect(filtered.some((file) => /[\\/]node_modules[\\/]@segment[\\/]destination-subscriptions[\\/]/.test(file))).toBe(true);
      expect(filtered.filter((file) => /[\\/]@segment[\\/]actions-core[\\/]/.test(file))).toEqual([]);
    }
  });

  it("wh sign, wh verify and a wh send without filters never load @segment/tsub; a send with filters loads it from the bundle's own file", async () => {
    const plain = await Promise.all([
      filesLoaded(["sign", "body.json"]),
      filesLoaded(["verify", "--signature", "0".repeat(40), "body.json"]),
      filesLoaded(DRY_SEND),
    ]);
    const filters = [{ if: "event = 'Other'", actions: [{ type: "DROP" }] }];
    const filtered = await filesLoaded(DRY_SEND, {}, { filters });

    for (const loaded of plain) expect(loaded.filter(isTsub)).toEqual([]);
    // Nor is it bundled into a file they read.
    expect(await bundling(plain.flat(), "@segment/tsub")).toEqual([]);
    expect(plain[2]?.some((file) => file.endsWith("send.cjs"))).toBe(true);
    expect(filtered.filter(isTsub).map((file) => file.split(/[\\/]/).slice(-2).join("/"))).toEqual(["cli-bundle/segment-tsub.cjs"]);
  });
});
