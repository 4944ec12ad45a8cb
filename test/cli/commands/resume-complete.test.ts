import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { manyEvents, runSigned, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs, type RunResult } from "../../helpers/run-wh.js";

// docs/replay.md's Kubernetes recipe: the same command, with --resume, run again by the kubelet
// (restartPolicy: OnFailure) for as long as it exits non-zero. A run that ended is never
// touched by a later --resume, and the loop ends. In-process.

const server = closedAfterEach();
afterAll(removeTempDirs);

/** What restartPolicy: OnFailure does with a container: runs it again while it exits non-zero. */
async function podLoop(args: readonly string[], cwd: string, most = 4): Promise<RunResult[]> {
  const runs: RunResult[] = [];
  do runs.push(await runSigned(args, { cwd }));
  while (runs[runs.length - 1]?.code !== 0 && runs.length < most);
  return runs;
}

/** Every file in `dir` with its bytes (as latin1 text: byte for byte, and readable in a diff), the test's own package.json aside. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const names = (await readdir(dir)).filter((name) => name !== "package.json").sort();
  return new Map(await Promise.all(names.map(async (name): Promise<[string, string]> => [name, await readFile(join(dir, name), "latin1")])));
}

/** 20 events, one the receiver refuses (HTTP 400, final) and one line that is not JSON. */
async function inputWithFailures(): Promise<{ dir: string; receiver: RecordingServer }> {
  const dir = await makeTempDir();
  const lines = manyEvents(20, 4).map((event) => event.line);
  lines.splice(7, 0, "not json", trackLine("user-9", "refused"));
  await writeFile(join(dir, "events.ndjson"), `${lines.join("\n")}\n`);
  const receiver = await server({ replies: (request) => (request.body.includes("refused") ? { status: 400, body: "no" } : 200) });
  return { dir, receiver };
}

describe("the Kubernetes recipe: --resume under restartPolicy: OnFailure", () => {
  it.each([
    ["replay", (url: string) => ["replay", "events.ndjson", "--url", url, "--resume"], "events.ndjson.failed.ndjson"],
    [
      "ingest",
      (url: string) => ["ingest", "events.ndjson", "--endpoint", url.replace(/\/hook$/, ""), "--write-key", "wk_loop", "--flush-at", "1", "--resume"],
      "events.ndjson.ingest-failed.ndjson",
    ],
  ])(
    "wh %s: a run with an invalid line and a failed event exits 1, the restarted --resume sends nothing, keeps every file byte for byte and exits 0, and the loop ends",
    async (_command, argsFor, deadLetterName) => {
      const { dir, receiver } = await inputWithFailures();
      const args = argsFor(receiver.url);

      const runs = await podLoop(args, dir);

      expect(
        runs.map((run) => run.code),
        runs.map((run) => run.stderr).join("\n---\n"),
      ).toEqual([1, 0]);
      const [first, restarted] = runs as [RunResult, RunResult];
      expect(first.stderr).toMatch(/line 8/);
      const sent = receiver.requests.length;
      const deadLetters = (await readFile(join(dir, deadLetterName), "utf8")).trim().split("\n");
      expect(deadLetters.map((line) => (JSON.parse(line) as { line: number }).line).sort()).toEqual([8, 9]);
      expect(restarted.stdout).toMatch(/complete already: 20 delivered, 0 skipped by integrations, 1 invalid, 1 failed; nothing was sent/);
      expect(restarted.stdout).toContain(`dead letters: ${join(dir, deadLetterName)}`);
      expect(restarted.stdout).toMatch(/the run ended with exit 1 \(1 invalid, 1 failed\)/);
      const files = await snapshot(dir);

      const again = await runSigned(args, { cwd: dir });

      expect(again.code, again.stderr).toBe(0);
      expect(receiver.requests).toHaveLength(sent);
      expect(await snapshot(dir)).toEqual(files);
    },
  );

  it("a --resume of a run that ended cleanly creates no dead-letter file and changes nothing", async () => {
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      `${manyEvents(5, 2)
        .map((event) => event.line)
        .join("\n")}\n`,
    );
    const receiver = await server();
    const args = ["replay", "events.ndjson", "--url", receiver.url, "--resume"];
    expect((await runSigned(args, { cwd: dir })).code).toBe(0);
    const files = await snapshot(dir);

    const resumed = await runSigned(args, { cwd: dir });

    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/complete already: 5 delivered/);
    expect(resumed.stdout).not.toMatch(/dead letters/);
    expect(await snapshot(dir)).toEqual(files);
    expect(receiver.requests).toHaveLength(5);
  });

  it("a --resume refused because the input changed since the run ended leaves the run's files as they were", async () => {
    const { dir, receiver } = await inputWithFailures();
    const args = ["replay", "events.ndjson", "--url", receiver.url, "--resume"];
    expect((await runSigned(args, { cwd: dir })).code).toBe(1);
    const files = await snapshot(dir);
    await writeFile(join(dir, "events.ndjson"), `${trackLine("user-1", "new")}\n`);
    files.set("events.ndjson", await readFile(join(dir, "events.ndjson"), "latin1"));
    const sent = receiver.requests.length;

    const resumed = await runSigned(args, { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/is not the input of the complete run the journal records/);
    expect(receiver.requests).toHaveLength(sent);
    expect(await snapshot(dir)).toEqual(files);
  });
});
