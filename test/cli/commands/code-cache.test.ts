import { chmod, mkdir, readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDirs, run } from "../../helpers/run-wh.js";

// bin/wh.cjs compiles the bundle's files with a V8 code cache kept in the user's cache folder
// ($XDG_CACHE_HOME/wh here), made when a file first runs. A code cache is code: a folder anyone
// else can write to is never used, and a cache that cannot be used or written changes nothing.

afterAll(removeTempDirs);

const FOLDER = `code-${process.version}-${process.arch}`;

/** A directory with body.json, and an XDG_CACHE_HOME inside it. */
async function setUp(): Promise<{ cwd: string; cacheHome: string }> {
  const cwd = await makeTempDir();
  await writeFile(join(cwd, "body.json"), '{"type":"track","userId":"u1","event":"Signed Up"}');
  return { cwd, cacheHome: join(cwd, "cache") };
}

async function sign(cwd: string, cacheHome: string): Promise<string> {
  const result = await run(["sign", "body.json"], { cwd, env: { WH_SHARED_SECRET: "s3cret", XDG_CACHE_HOME: cacheHome } });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout;
}

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("the bundle's code cache", () => {
  it("is written at the first start into the user's cache folder, readable by the user only, and used by the next start", async () => {
    const { cwd, cacheHome } = await setUp();
    const first = await sign(cwd, cacheHome);
    const folder = join(cacheHome, "wh", FOLDER);
    const files = await readdir(folder);
    expect(files.length).toBeGreaterThan(0);
    expect(await mode(join(cacheHome, "wh"))).toBe(0o700);
    expect(await mode(folder)).toBe(0o700);
    for (const file of files) expect(await mode(join(folder, file))).toBe(0o600);
    const written = await Promise.all(files.map(async (file) => (await stat(join(folder, file))).mtimeMs));
    expect(await sign(cwd, cacheHome)).toBe(first);
    // Used, not made again: the same files, untouched.
    expect(await readdir(folder)).toEqual(files);
    expect(await Promise.all(files.map(async (file) => (await stat(join(folder, file))).mtimeMs))).toEqual(written);
  });

  it("keeps the 30 caches written last: older builds' go", async () => {
    const { cwd, cacheHome } = await setUp();
    const folder = join(cacheHome, "wh", FOLDER);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await chmod(join(cacheHome, "wh"), 0o700);
    const old = Array.from({ length: 40 }, (_, index) => `old-build-${index}`);
    for (const [index, name] of old.entries()) {
      await writeFile(join(folder, name), "an older build's cache");
      await utimes(join(folder, name), 1_000_000 + index, 1_000_000 + index);
    }
    await sign(cwd, cacheHome);
    const kept = await readdir(folder);
    expect(kept).toHaveLength(30);
    const made = kept.filter((name) => !name.startsWith("old-build-"));
    expect(made.length).toBeGreaterThan(0);
    // The newest of the old ones stay, the oldest went.
    expect(kept.filter((name) => name.startsWith("old-build-")).sort()).toEqual(old.slice(40 - (30 - made.length)).sort());
  });

  it("a damaged cache is refused by V8 and the command works as without one", async () => {
    const { cwd, cacheHome } = await setUp();
    const expected = await sign(cwd, cacheHome);
    const folder = join(cacheHome, "wh", FOLDER);
    for (const file of await readdir(folder)) await writeFile(join(folder, file), "not a code cache");
    expect(await sign(cwd, cacheHome)).toBe(expected);
  });

  it("a cache folder that others can write to is not used", async () => {
    const { cwd, cacheHome } = await setUp();
    const shared = join(cacheHome, "wh");
    await mkdir(shared, { recursive: true });
    await chmod(shared, 0o777);
    await sign(cwd, cacheHome);
    expect(await readdir(shared)).toEqual([]);
  });

  it("a cache folder that cannot be made changes nothing", async () => {
    const { cwd } = await setUp();
    const notAFolder = join(cwd, "file");
    await writeFile(notAFolder, "");
    const result = await run(["sign", "body.json"], { cwd, env: { WH_SHARED_SECRET: "s3cret", XDG_CACHE_HOME: join(notAFolder, "cache") } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^[0-9a-f]{40}\n$/);
  });

  it("an ES module config file is read, at the first start and from the cache", async () => {
    const { cwd, cacheHome } = await setUp();
    await writeFile(join(cwd, "wh.config.mjs"), 'export default { mode: "classic", webhooks: [{ url: "http://127.0.0.1:9/from-config" }] };\n');
    for (const start of ["first", "cached"]) {
      const result = await run(["send", "track", "--user-id", "u1", "--event", "X", "--dry-run"], {
        cwd,
        env: { WH_SHARED_SECRET: "s3cret", XDG_CACHE_HOME: cacheHome },
      });
      expect({ start, stderr: result.stderr, code: result.code }).toEqual({ start, stderr: "", code: 0 });
      expect(result.stdout).toContain("http://127.0.0.1:9/from-config");
    }
  });
});
