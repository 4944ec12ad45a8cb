import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { manyEvents, messageIdOf, runSigned, SECRET, spawnSigned, trackLine } from "./replay-helpers.js";
import { builtBin, cleanEnv, makeTempDir, removeTempDirs, spawnWh, type WhProcess } from "../../helpers/run-wh.js";
import { tracked } from "../../helpers/children.js";

// Resume only what was started, where it was started; one writer per journal.
// In-process, but for kill -9 and a restarted container's pid 1, which spawn bin/wh.cjs (dist/).

const server = closedAfterEach();
afterAll(removeTempDirs);

const ndjson = (lines: readonly string[]): string => lines.map((line) => `${line}\n`).join("");

/** A replay of `count` events stopped by SIGINT once the receiver has its `stopAfter`-th request. */
async function interruptedReplay(
  count: number,
  stopAfter: number,
  extra: string[] = [],
  input?: string,
): Promise<{ dir: string; receiver: RecordingServer; lines: string[]; first: { code: number | null; stdout: string; stderr: string } }> {
  const dir = await makeTempDir();
  const lines = manyEvents(count, 7).map((event) => event.line);
  await writeFile(join(dir, "events.ndjson"), ndjson(lines));
  let running: WhProcess | undefined;
  const receiver = await server({
    replies: (_request, index) => {
      if (index + 1 === stopAfter) running?.child.kill("SIGINT");
      return { status: 200, delayMs: 5 };
    },
  });
  const file = input === undefined ? "events.ndjson" : "-";
  running = spawnSigned(["replay", file, "--url", receiver.url, "--concurrency", "4", ...extra], { cwd: dir, ...(input === undefined ? {} : { input }) });
  const first = await running.exited;
  expect(first.code, first.stderr).toBe(130);
  return { dir, receiver, lines, first };
}

describe("wh replay --resume checks the input line by line", () => {
  it("refuses a file regenerated in place with other events, naming the first differing line, and sends nothing", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40);
    const before = receiver.requests.length;
    await writeFile(join(dir, "events.ndjson"), ndjson(Array.from({ length: 200 }, (_, index) => trackLine(`other-${index % 7}`, `x-${index}`))));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(
      /--resume: line 1 of events\.ndjson is not the line the journal recorded as finished: the input changed since the run began; nothing was sent/,
    );
    expect(receiver.requests).toHaveLength(before);
  });

  it("refuses a file with lines inserted at its top", async () => {
    const { dir, receiver, lines } = await interruptedReplay(200, 40);
    const before = receiver.requests.length;
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("new", "new-1"), trackLine("new", "new-2"), ...lines]));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/line 1 of events\.ndjson is not the line/);
    expect(receiver.requests).toHaveLength(before);
  });

  it("refuses other data piped on stdin, and resumes the same data piped again", async () => {
    const events = manyEvents(200, 7).map((event) => event.line);
    const { dir, receiver } = await interruptedReplay(200, 40, [], ndjson(events));
    const before = receiver.requests.length;

    const other = await runSigned(["replay", "-", "--url", receiver.url, "--resume"], {
      cwd: dir,
      input: ndjson(events.map((line) => line.replace("Replayed", "Changed"))),
    });
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/line 1 of standard input is not the line the journal recorded as finished/);
    expect(receiver.requests).toHaveLength(before);

    const same = await runSigned(["replay", "-", "--url", receiver.url, "--resume"], { cwd: dir, input: ndjson(events) });
    expect(same.code, same.stderr).toBe(0);
    expect(new Set(receiver.requests.map(messageIdOf)).size).toBe(200);
  });

  it("refuses an input cut short before lines the journal records as finished", async () => {
    const { dir, receiver, lines } = await interruptedReplay(200, 60);
    await writeFile(join(dir, "events.ndjson"), ndjson(lines.slice(0, 3)));

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/the journal records line \d+ of events\.ndjson as finished, but the input has 3 lines/);
  });
});

describe("wh replay --resume checks the destination", () => {
  it("prints a resume command that repeats --url and the flags given, shell-quoted, never the secret", async () => {
    const { first } = await interruptedReplay(200, 40, ["--header", "X-Tenant: acme corp", "--header", "Authorization: Bearer t0k3n", "--secret", SECRET]);

    expect(first.stderr).toMatch(
      /interrupted: resume with {2}wh replay events\.ndjson --url http:\/\/127\.0\.0\.1:\d+\/hook --header 'X-Tenant: acme corp' --header 'Authorization: \*\*\*' --concurrency 4 --resume {3}\(type the values shown as \*\*\* again; give the secret again \(WH_SHARED_SECRET or --secret-file\)\)/,
    );
    expect(`${first.stdout}${first.stderr}`).not.toContain(SECRET);
    expect(`${first.stdout}${first.stderr}`).not.toContain("t0k3n");
  });

  it("refuses a resume that would deliver elsewhere (the config's URL instead of --url), naming the original destination", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40);
    const elsewhere = await server();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ webhooks: [{ url: elsewhere.url }] }));

    const resumed = await runSigned(["replay", "events.ndjson", "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain(`delivered to ${receiver.url}; this one would deliver to ${elsewhere.url}`);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("refuses a resume whose --header has another value, or is left out, naming the header and never the value of a credential", async () => {
    const headers = ["--header", "X-Tenant: acme", "--header", "Authorization: Bearer first-t0ken"];
    const { dir, receiver } = await interruptedReplay(200, 40, headers);
    const before = receiver.requests.length;
    const resume = (extra: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      runSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4", ...extra, "--resume"], { cwd: dir });

    const tenant = await resume(["--header", "X-Tenant: globex", "--header", "Authorization: Bearer first-t0ken"]);
    const token = await resume(["--header", "X-Tenant: acme", "--header", "Authorization: Bearer second-t0ken"]);
    const dropped = await resume(["--header", "Authorization: Bearer first-t0ken"]);
    const added = await resume([...headers, "--header", "X-Region: eu"]);

    for (const result of [tenant, token, dropped, added]) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`the run in ${join(dir, "events.ndjson.wh-journal")} delivered to ${receiver.url} with other settings than this one:`);
      expect(result.stderr).not.toContain("this one would deliver to");
      expect(`${result.stdout}${result.stderr}`).not.toMatch(/t0ken/);
    }
    expect(tenant.stderr).toMatch(/: header X-Tenant \(another value\)$/m);
    expect(token.stderr).toMatch(/: header Authorization \(another value\)$/m);
    expect(dropped.stderr).toMatch(/: header X-Tenant \(not given now\)$/m);
    expect(added.stderr).toMatch(/: header X-Region \(not given then\)$/m);
    expect(receiver.requests).toHaveLength(before);

    const same = await resume(headers);
    expect(same.code, same.stderr).toBe(0);
  });

  it("masks a URL password in the original destination it names", async () => {
    const { dir, receiver } = await interruptedReplay(200, 40, [], undefined);
    const withPassword = receiver.url.replace("http://", "http://alice:hunter22@");

    const resumed = await runSigned(["replay", "events.ndjson", "--url", withPassword, "--resume"], { cwd: dir });

    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain("http://***:***@127.0.0.1");
    expect(resumed.stderr).not.toContain("hunter22");
  });
});

describe("one wh replay per journal", () => {
  it("refuses a second replay of the same file while the first runs, naming it; the first delivers every event once", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(300, 7);
    await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
    const receiver = await server({ replies: [{ status: 200, delayMs: 10 }] });
    const first = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"], { cwd: dir });
    while (receiver.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));

    const second = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });
    const done = await first.exited;

    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(new RegExp(`the journal .*events\\.ndjson\\.wh-journal is in use by another wh run: process ${first.child.pid} on `));
    expect(done.code, done.stderr).toBe(0);
    expect(receiver.requests.map(messageIdOf).sort()).toEqual(events.map((event) => event.messageId));
  });

  it("lets exactly one of two --resume runs racing for a stale lock run, the other exits 2 naming it; the final --resume keeps every dead-letter record", async () => {
    for (let round = 0; round < 4; round += 1) {
      const dir = await makeTempDir();
      const lines = manyEvents(400, 7).map((event, index) =>
        index % 50 === 10 ? "not json" : index % 50 === 20 ? trackLine("user-1", `refused-${index}`) : event.line,
      );
      await writeFile(join(dir, "events.ndjson"), ndjson(lines));
      const receiver = await server({ replies: (request) => (request.body.includes("refused") ? 400 : { status: 200, delayMs: 5 }) });
      const args = ["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"];
      let first: WhProcess | undefined;
      const stopper = setInterval(() => {
        if (receiver.requests.length >= 120) first?.child.kill("SIGKILL");
      }, 5);
      // kill -9 is the process's: this first run is spawned.
      first = spawnSigned(args, { cwd: dir }, spawnWh);
      expect((await first.exited).signal).toBe("SIGKILL");
      clearInterval(stopper);
      // kill -9 left the lock of a process that is gone.
      expect(JSON.parse(await readFile(join(dir, "events.ndjson.wh-journal.lock"), "utf8"))).toMatchObject({ pid: first.child.pid });

      const racers = [spawnSigned([...args, "--resume"], { cwd: dir }), spawnSigned([...args, "--resume"], { cwd: dir })];
      const results = await Promise.all(racers.map((racer) => racer.exited));

      const codes = results.map((result) => result.code);
      expect(
        codes.filter((code) => code === 2),
        results.map((result) => result.stderr).join("\n---\n"),
      ).toHaveLength(1);
      const loser = codes.indexOf(2);
      const winner = racers[1 - loser] as WhProcess;
      expect((results[loser] as { stderr: string }).stderr).toMatch(new RegExp(`is in use by another wh run: process ${winner.child.pid} on `));
      expect(results[1 - loser]?.code).toBe(1);
      const final = await runSigned([...args, "--resume"], { cwd: dir });
      expect(final.code, final.stderr).toBe(0);
      expect(final.stdout).toMatch(/complete already: 384 delivered, 0 skipped by integrations, 8 invalid, 8 failed/);
      const recorded = (await readFile(join(dir, "events.ndjson.failed.ndjson"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { line: number }).line);
      const expected = lines.flatMap((line, index) => (line === "not json" || line.includes("refused") ? [index + 1] : []));
      expect(recorded.sort((a, b) => a - b)).toEqual(expected);
    }
  });

  it("takes over a lock naming this very process's pid with another token (a restarted container's wh is pid 1 again)", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1")]));
    const receiver = await server();
    const lock = join(dir, "events.ndjson.wh-journal.lock");
    // The shell writes the lock with its own pid, then becomes wh (exec keeps the pid).
    const script = `printf '{"pid":%d,"host":"%s","startedAt":"2026-11-22T00:00:00.000Z","token":"before-the-restart"}' $$ "$(hostname)" > "$LOCK" && exec "$NODE" "$BIN" replay events.ndjson --url "$URL"`;
    const child = tracked(
      spawn("sh", ["-c", script], {
        cwd: dir,
        env: cleanEnv({ LOCK: lock, NODE: process.execPath, BIN: builtBin(), URL: receiver.url, WH_SHARED_SECRET: SECRET }),
      }),
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const [code] = (await once(child, "close")) as [number | null];

    expect(code, stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });

  it("takes over a lock naming a live pid (1) whose process started after the lock was taken", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1")]));
    await writeFile(
      join(dir, "events.ndjson.wh-journal.lock"),
      JSON.stringify({ pid: 1, host: hostname(), startedAt: "2026-11-22T00:00:00.000Z", token: "old-container", processStart: "not-pid-1s-start" }),
    );
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });

  it("takes over the lock of a replay killed with kill -9", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1")]));
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    await writeFile(
      join(dir, "events.ndjson.wh-journal.lock"),
      JSON.stringify({ pid: Number(dead.stdout), host: hostname(), startedAt: "2026-11-22T00:00:00.000Z", token: "gone" }),
    );
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });
});
