import { execFileSync } from "node:child_process";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { runSigned, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, run } from "./run-wh.js";

// Every file a run writes is checked before the first request: exit 2 naming the path and the
// reason, nothing sent. These tests spawn bin/wh.cjs (dist/): `npm run build` first.

const server = closedAfterEach();
let readOnlyDir: string | undefined;
let readOnlyReason = "";

beforeAll(async () => {
  // A read-only file system of our own: a read-only tmpfs (we run as root in CI).
  const dir = await makeTempDir();
  const mountPoint = join(dir, "ro");
  await mkdir(mountPoint);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", mountPoint], { stdio: "pipe" });
    readOnlyDir = mountPoint;
  } catch (error) {
    readOnlyReason = (error as Error).message.split("\n")[0] ?? "mount failed";
    process.stderr.write(`output-paths: read-only file system cases skipped: cannot mount a tmpfs here (${readOnlyReason})\n`);
  }
});

afterAll(async () => {
  if (readOnlyDir !== undefined) execFileSync("umount", [readOnlyDir]);
  await removeTempDirs();
});

type Case = [name: string, flag: string, place: (dir: string) => Promise<string>, reason: RegExp];

const CASES: Case[] = [
  ["a missing directory", "", async (dir) => join(dir, "no", "such", "file"), /no such directory: .*no\/such/],
  ["a directory in the way", "", async (dir) => {
    const path = join(dir, "in-the-way");
    await mkdir(path);
    return path;
  }, /is a directory/],
  ["a symbolic link", "", async (dir) => {
    const target = join(dir, "precious.txt");
    await writeFile(target, "keep me\n");
    const path = join(dir, "link");
    await symlink(target, path);
    return path;
  }, /is a symbolic link/],
];

async function setUp(): Promise<{ dir: string }> {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n${trackLine("u2", "m2")}\n`);
  return { dir };
}

describe.each([
  ["--journal", (path: string) => ["replay", "events.ndjson", "--journal", path]],
  ["--dead-letter", (path: string) => ["replay", "events.ndjson", "--dead-letter", path]],
  ["--state", (path: string) => ["audience", "sync", "VIP", "--members", "members.txt", "--state", path]],
])("%s", (flag, argsFor) => {
  it.each(CASES)("exits 2 on %s, naming the path and the reason, and sends nothing", async (_name, _unused, place, reason) => {
    const { dir } = await setUp();
    await writeFile(join(dir, "members.txt"), "u1\nu2\n");
    const receiver = await server();
    const path = await place(dir);

    const result = await runSigned([...argsFor(path), "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toMatch(reason);
    expect(receiver.requests).toHaveLength(0);
    if (path.endsWith("link")) expect(await readFile(join(dir, "precious.txt"), "utf8")).toBe("keep me\n");
  });

  it("exits 2 on a read-only file system, and sends nothing", async (context) => {
    if (readOnlyDir === undefined) return context.skip(`cannot mount a read-only tmpfs: ${readOnlyReason}`);
    const { dir } = await setUp();
    await writeFile(join(dir, "members.txt"), "u1\n");
    const receiver = await server();
    const path = join(readOnlyDir, `out-${flag.slice(2)}`);

    const result = await runSigned([...argsFor(path), "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toMatch(/read-only file system/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("wh listen --out", () => {
  it.each(CASES)("exits 2 on %s before listening", async (_name, _unused, place, reason) => {
    const dir = await makeTempDir();
    const path = await place(dir);

    const result = await run(["listen", "--out", path], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toMatch(reason);
    expect(result.stdout).not.toMatch(/listening/);
    if (path.endsWith("link")) expect(await readFile(join(dir, "precious.txt"), "utf8")).toBe("keep me\n");
  });
});
