import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { manyEvents, messageIdOf, runSigned, SECRET, spawnSigned } from "./replay-helpers.js";
import { builtBin, cleanEnv, makeTempDir, removeTempDirs, spawnWh, type WhProcess } from "../../helpers/run-wh.js";
import { tracked } from "../../helpers/children.js";

// Spawned (signals, closed pipes and a terminal are the process's): SIGTERM and SIGHUP, a closed
// stdout or stderr, and the spinner under a terminal. They run bin/wh.cjs (dist/).

const server = closedAfterEach();
afterAll(removeTempDirs);

const ndjson = (lines: readonly string[]): string => lines.map((line) => `${line}\n`).join("");

async function eventsFile(count: number): Promise<{ dir: string; ids: string[] }> {
  const dir = await makeTempDir();
  const events = manyEvents(count, 11);
  await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
  return { dir, ids: events.map((event) => event.messageId) };
}

describe("signals stop a run like the first Ctrl-C", () => {
  it.each(["SIGTERM", "SIGHUP"] as const)("%s: exit 130 with the resume command, and --resume completes", async (signal) => {
    const { dir, ids } = await eventsFile(400);
    let running: WhProcess | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 50) running?.child.kill(signal);
        return { status: 200, delayMs: 3 };
      },
    });
    running = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"], { cwd: dir }, spawnWh);

    const stopped = await running.exited;

    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toMatch(/interrupted: resume with {2}wh replay events\.ndjson --url \S+ --concurrency 4 --resume/);
    expect(receiver.requests.length).toBeLessThan(400);
    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir }, spawnWh);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect([...new Set(receiver.requests.map(messageIdOf))].sort()).toEqual(ids);
  });
});

describe("closed pipes", () => {
  it("stops resumably with exit 141 when the reader of --json closes after one line (| head -1); --resume delivers the rest", async () => {
    const { dir, ids } = await eventsFile(3_000);
    const receiver = await server({ replies: [{ status: 200, delayMs: 2 }] });
    const child = tracked(
      spawn(process.execPath, [builtBin(), "replay", "events.ndjson", "--url", receiver.url, "--json"], {
        cwd: dir,
        env: cleanEnv({ WH_SHARED_SECRET: SECRET }),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    // Like `head -1`: read up to the first newline, then close the pipe.
    await new Promise<void>((resolve) => {
      let seen = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        seen += chunk;
        if (seen.includes("\n")) {
          child.stdout.destroy();
          resolve();
        }
      });
    });
    const [code] = (await once(child, "close")) as [number | null];

    expect(code, stderr).toBe(141);
    expect(stderr).toMatch(/interrupted: resume with/);
    expect(receiver.requests.length).toBeLessThan(3_000);
    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir }, spawnWh);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect([...new Set(receiver.requests.map(messageIdOf))].sort()).toEqual(ids);
  });

  it("goes on and delivers everything when stderr is closed", async () => {
    const { dir, ids } = await eventsFile(200);
    const receiver = await server();
    const child = tracked(
      spawn(process.execPath, [builtBin(), "replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"], {
        cwd: dir,
        env: cleanEnv({ WH_SHARED_SECRET: SECRET }),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    child.stderr.destroy();
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const [code] = (await once(child, "close")) as [number | null];

    expect(code, stdout).toBe(0);
    expect(stdout).toMatch(/^200 delivered/m);
    expect(receiver.requests.map(messageIdOf).sort()).toEqual(ids);
  });
});

describe("the spinner on a terminal", () => {
  it("shows one spinner on --resume with a large journal, and the process exits after one Ctrl-C", async () => {
    const { dir } = await eventsFile(20_000);
    const receiver = await server({ replies: [{ status: 200, delayMs: 1 }] });
    // A first run stopped midway leaves a large journal.
    let running: WhProcess | undefined;
    const first = await server({
      replies: (_request, index) => {
        if (index === 15_000) running?.child.kill("SIGINT");
        return 200;
      },
    });
    running = spawnSigned(["replay", "events.ndjson", "--url", first.url, "--concurrency", "64"], { cwd: dir }, spawnWh);
    expect((await running.exited).code).toBe(130);
    await writeFile(join(dir, "again.sh"), `stty cols 120 rows 40\nexec node ${builtBin()} replay events.ndjson --url ${first.url} --resume --concurrency 1\n`);
    // `script` gives wh a pseudo-terminal, as a person's shell would.
    const child = tracked(
      spawn("script", ["-qfec", `sh ${join(dir, "again.sh")}`, "/dev/null"], {
        cwd: dir,
        env: cleanEnv({ WH_SHARED_SECRET: SECRET, TERM: "xterm", NO_COLOR: undefined }),
        stdio: ["pipe", "pipe", "pipe"],
      }),
    );
    let screen = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (screen += chunk));
    while (!/resuming/.test(screen)) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 400));
    child.stdin.write("\x03");
    const exited = once(child, "close");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const [code] = (await exited) as [number | null];
    clearTimeout(timer);

    expect(screen).toMatch(/read \d+% · \d+ of \d+ finished · \d+ delivered · \d+ failed · \d+ invalid/);
    expect(screen).not.toMatch(/Multiple concurrent spinners/);
    expect(code, screen).toBe(130);
    void receiver;
    const journal = await readFile(join(dir, "events.ndjson.wh-journal"), "utf8");
    expect(journal.split("\n").length).toBeGreaterThan(15_000);
  });
});
