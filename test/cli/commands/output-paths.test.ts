import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { link, mkdir, open, readFile, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runSigned, spawnSigned, trackLine } from "./replay-helpers.js";
import { runInProcess } from "../../helpers/in-process.js";
import { builtBin, cleanEnv, makeTempDir, removeTempDirs, type RunResult } from "../../helpers/run-wh.js";
import { tracked } from "../../helpers/children.js";

// Every file a run writes is checked before the first request: exit 2 naming the path and the
// reason, nothing sent. In-process, but for standard input redirected from a file, which needs
// a spawned bin/wh.cjs (dist/) with a real descriptor 0.

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
  [
    "a directory in the way",
    "",
    async (dir) => {
      const path = join(dir, "in-the-way");
      await mkdir(path);
      return path;
    },
    /is a directory/,
  ],
  [
    "a symbolic link",
    "",
    async (dir) => {
      const target = join(dir, "precious.txt");
      await writeFile(target, "keep me\n");
      const path = join(dir, "link");
      await symlink(target, path);
      return path;
    },
    /is a symbolic link/,
  ],
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

    const result = await runInProcess(["listen", "--out", path], { cwd: dir });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toMatch(reason);
    expect(result.stdout).not.toMatch(/listening/);
    if (path.endsWith("link")) expect(await readFile(join(dir, "precious.txt"), "utf8")).toBe("keep me\n");
  });
});

describe("an output path that is the input", () => {
  const INPUT = `${trackLine("u1", "m1")}\nnot json\n`;

  type Place = [name: string, args: (dir: string) => Promise<string[]>];
  const PLACES: Place[] = [
    ["--dead-letter naming the input", async () => ["replay", "events.ndjson", "--dead-letter", "events.ndjson"]],
    ["--journal naming the input", async () => ["replay", "events.ndjson", "--journal", "events.ndjson"]],
    [
      "--dead-letter naming a hard link to the input",
      async (dir) => {
        await link(join(dir, "events.ndjson"), join(dir, "hard-link.ndjson"));
        return ["replay", "events.ndjson", "--dead-letter", "hard-link.ndjson"];
      },
    ],
    [
      "--journal naming the file a symbolic-link input points to",
      async (dir) => {
        await symlink(join(dir, "events.ndjson"), join(dir, "through-link.ndjson"));
        return ["replay", "through-link.ndjson", "--journal", "events.ndjson"];
      },
    ],
    ["--resume with --dead-letter naming the input", async () => ["replay", "events.ndjson", "--dead-letter", "events.ndjson", "--resume"]],
    ["wh ingest --dead-letter naming the input", async () => ["ingest", "events.ndjson", "--write-key", "wk_1", "--dead-letter", "events.ndjson"]],
    ["wh ingest --journal naming the input", async () => ["ingest", "events.ndjson", "--write-key", "wk_1", "--journal", "events.ndjson"]],
  ];

  it.each(PLACES)("refuses %s (exit 2), sends nothing and leaves the input whole", async (_name, argsFor) => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), INPUT);
    const receiver = await server();
    const args = await argsFor(dir);
    const target = args[0] === "ingest" ? ["--endpoint", receiver.url] : ["--url", receiver.url];

    const result = await runSigned([...args, ...target], { cwd: dir });

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/(--dead-letter|--journal) \S+: is the input \S+ \(the same file\)/);
    expect(receiver.requests).toHaveLength(0);
    expect(await readFile(join(dir, "events.ndjson"), "utf8")).toBe(INPUT);
  });

  it("refuses a --dead-letter that is the file standard input is read from", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), INPUT);
    const receiver = await server();
    const stdin = await open(join(dir, "events.ndjson"), "r");

    const result = await runWithStdin(["replay", "-", "--dead-letter", "events.ndjson", "--url", receiver.url], dir, stdin.fd).finally(() => stdin.close());

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/--dead-letter \S+: is the file standard input reads \(the same file\)/);
    expect(await readFile(join(dir, "events.ndjson"), "utf8")).toBe(INPUT);
  });

  it("never takes the input for a stale lock: a --journal whose lock file would be the input is refused", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "run.lock"), INPUT);
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(join(dir, "run.lock"), longAgo, longAgo);
    const receiver = await server();

    const result = await runSigned(["replay", "run.lock", "--journal", "run", "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/run\.lock is not a wh lock file/);
    expect(receiver.requests).toHaveLength(0);
    expect(await readFile(join(dir, "run.lock"), "utf8")).toBe(INPUT);
  });

  it("refuses a --dead-letter that is the --journal, and sends nothing", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), INPUT);
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--journal", "run.log", "--dead-letter", "run.log", "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/--dead-letter \S+run\.log: is the journal \S+run\.log \(the same file\)/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe("a named pipe (FIFO) as an output file", () => {
  const FIFO_CASES: [flag: string, args: (fifo: string) => string[]][] = [
    ["replay --dead-letter", (fifo) => ["replay", "events.ndjson", "--dead-letter", fifo]],
    ["replay --journal", (fifo) => ["replay", "events.ndjson", "--journal", fifo]],
    ["ingest --dead-letter", (fifo) => ["ingest", "events.ndjson", "--write-key", "wk_1", "--dead-letter", fifo]],
    ["audience sync --state", (fifo) => ["audience", "sync", "VIP", "--members", "members.txt", "--state", fifo]],
    ["listen --out", (fifo) => ["listen", "--out", fifo]],
  ];

  it.each(FIFO_CASES)("%s: exits 2 at once naming the pipe, instead of waiting for a reader", async (_flag, argsFor) => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    await writeFile(join(dir, "members.txt"), "u1\n");
    const fifo = join(dir, "pipe");
    execFileSync("mkfifo", [fifo]);
    const receiver = await server();
    const args = argsFor(fifo);
    const target = args[0] === "listen" ? [] : args[0] === "ingest" ? ["--endpoint", receiver.url] : ["--url", receiver.url];

    const result = await runWithin([...args, ...target], dir, 10_000);

    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(fifo);
    expect(result.stderr).toMatch(/named pipe|not a regular file/);
    expect(receiver.requests).toHaveLength(0);
  });
});

/** `wh ...args` with standard input read from an open file descriptor (`wh replay - < file`). */
async function runWithStdin(args: readonly string[], cwd: string, fd: number): Promise<{ code: number | null; stderr: string }> {
  const child = tracked(spawn(process.execPath, [builtBin(), ...args], { cwd, env: cleanEnv({ WH_SHARED_SECRET: "s" }), stdio: [fd, "ignore", "pipe"] }));
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stderr };
}

/** runSigned, stopped (and so failing the test) if it has not ended within `limitMs`. */
async function runWithin(args: readonly string[], cwd: string, limitMs: number): Promise<RunResult> {
  const wh = spawnSigned(args, { cwd });
  const timer = setTimeout(() => wh.child.kill("SIGTERM"), limitMs);
  return wh.exited.finally(() => clearTimeout(timer));
}
