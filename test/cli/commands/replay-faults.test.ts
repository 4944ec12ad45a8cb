import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { lstat, mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { countByMessageId, exists, manyEvents, messageIdOf, readNdjson, runSigned, spawnSigned, trackLine } from "./replay-helpers.js";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs, type WhProcess } from "../../helpers/run-wh.js";

// A write that fails mid-run, poison lines, malformed answers, Retry-After storms and the exit
// code of a resumed run. In-process.

const server = closedAfterEach();
const mounts: string[] = [];
let canMount = true;

/** A tmpfs of `size` at a fresh directory, or undefined where mounting is not allowed. */
async function smallDisk(size: string): Promise<string | undefined> {
  if (!canMount) return undefined;
  const dir = join(await makeTempDir(), "disk");
  await mkdir(dir);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    canMount = false;
    process.stderr.write(`replay-faults: the full-disk case runs on /dev/full only: cannot mount a tmpfs here (${(error as Error).message.split("\n")[0]})\n`);
    return undefined;
  }
  mounts.push(dir);
  return dir;
}

beforeAll(async () => {
  await smallDisk("64k");
});

afterAll(async () => {
  for (const dir of mounts) execFileSync("umount", [dir]);
  await removeTempDirs();
});

const ndjson = (lines: readonly string[]): string => lines.map((line) => `${line}\n`).join("");

describe("a write that fails mid-run", () => {
  it("on a full 64 KB disk: every dead-letter record whole, no line journaled without its record, exit 74; resume finishes", async (context) => {
    const disk = mounts[0];
    if (disk === undefined) return context.skip("cannot mount a tmpfs here");
    const dir = await makeTempDir();
    const valid = manyEvents(200, 9);
    // 1,000 invalid lines of about 200 bytes: their records need far more than 64 KB.
    const invalid = Array.from({ length: 1_000 }, (_, index) => `{"type":"track","userId":"u${index}","broken": ${"x".repeat(150)}`);
    const lines = [...valid.map((event) => event.line), ...invalid];
    await writeFile(join(dir, "events.ndjson"), ndjson(lines));
    const receiver = await server();
    const deadLetter = join(disk, "failed.ndjson");

    // --max-failures 0: the 1,000 lines are invalid the same way, which would stop the run at 100.
    const first = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--max-failures", "0", "--dead-letter", deadLetter], { cwd: dir });

    expect(first.code, first.stderr).toBe(74);
    expect(first.stderr).toMatch(new RegExp(`could not write --dead-letter ${deadLetter}: no space left on device`));
    expect(first.stderr).toMatch(/resume with {2}wh replay events\.ndjson --url .* --dead-letter .*failed\.ndjson --resume/);
    const written = (await readFile(deadLetter, "utf8")).split("\n");
    expect(written.pop()).toBe("");
    const records = written.map((line) => JSON.parse(line) as { line: number });
    const journal = (await readFile(join(dir, "events.ndjson.wh-journal"), "utf8")).trim().split("\n").slice(1);
    const journaledInvalid = journal.filter((record) => record.endsWith(" i")).map((record) => Number(record.split(" ")[0]));
    expect(journaledInvalid.sort((a, b) => a - b)).toEqual(records.map((record) => record.line).sort((a, b) => a - b));
    expect(records.length).toBeLessThan(1_000);

    // Space is freed (the records are moved off the disk, as a person would), then resume.
    const kept = await readFile(deadLetter, "utf8");
    execFileSync("umount", [disk]);
    mounts.splice(mounts.indexOf(disk), 1);
    await writeFile(deadLetter.replace(disk, dir), kept);
    const resumed = await runSigned(
      ["replay", "events.ndjson", "--url", receiver.url, "--max-failures", "0", "--dead-letter", deadLetter.replace(disk, dir), "--resume"],
      {
        cwd: dir,
      },
    );

    expect(resumed.code, resumed.stderr).toBe(1);
    const all = await readNdjson(deadLetter.replace(disk, dir));
    expect(all.map((record) => record.line).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 1_000 }, (_, index) => 201 + index));
    expect([...countByMessageId(receiver.requests).keys()].sort()).toEqual(valid.map((event) => event.messageId));
  });

  it("with the journal's disk full after the dead letters were written: the journal and the dead letters agree, and each failed line is dead-lettered once across --resume", async (context) => {
    // Two pages of tmpfs, one the journal's lock's: its header and about 150 records fit, then the disk refuses
    // the journal a write right after the dead-letter file (elsewhere) took its records.
    const disk = await smallDisk("8k");
    if (disk === undefined) return context.skip("cannot mount a tmpfs here");
    const dir = await makeTempDir();
    const events = manyEvents(600, 20);
    await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
    const refusing = await server({ replies: [400] });
    const deadLetter = join(dir, "failed.ndjson");
    const files = ["--max-failures", "0", "--journal", join(disk, "events.wh-journal"), "--dead-letter", deadLetter];

    const first = await runSigned(["replay", "events.ndjson", "--url", refusing.url, ...files], { cwd: dir });

    expect(first.code, first.stderr).toBe(74);
    expect(first.stderr).toMatch(/could not write --journal .*: no space left on device/);
    const journaled = (await readFile(join(disk, "events.wh-journal"), "utf8")).trim().split("\n").slice(1);
    const lettered = (await readNdjson(deadLetter)).map((record) => Number(record.line));
    expect(lettered.length).toBeGreaterThan(0);
    // A line has its dead letter exactly when the journal records it finished.
    expect(lettered.sort((a, b) => a - b)).toEqual(journaled.map((record) => Number(record.split(" ")[0])).sort((a, b) => a - b));

    execFileSync("mount", ["-o", "remount,size=1m", disk]);
    const resumed = await runSigned(["replay", "events.ndjson", "--url", refusing.url, ...files, "--resume"], { cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(1);
    const lines = (await readNdjson(deadLetter)).map((record) => Number(record.line));
    expect(lines.sort((a, b) => a - b)).toEqual(events.map((_, index) => index + 1));
  });

  it("with no room for the journal's header: exit 74 before sending, and the journal is not left open (its disk unmounts)", async (context) => {
    // One page of tmpfs, which the journal's lock file takes.
    const disk = await smallDisk("4k");
    if (disk === undefined) return context.skip("cannot mount a tmpfs here");
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1")]));
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--journal", join(disk, "events.wh-journal")], { cwd: dir });

    expect(result.code, result.stderr).toBe(74);
    expect(result.stderr).toMatch(/could not write --journal .*: no space left on device/);
    expect(receiver.requests).toHaveLength(0);
    execFileSync("umount", [disk]);
    mounts.splice(mounts.indexOf(disk), 1);
  });

  it("with /dev/full as the dead-letter file: exit 74 at the first record, and no invalid line is journaled", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1"), "not json", trackLine("u2", "m2")]));
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--dead-letter", "/dev/full"], { cwd: dir });

    expect(result.code, result.stderr).toBe(74);
    expect(result.stderr).toMatch(/could not write --dead-letter \/dev\/full: no space left on device/);
    const journal = await readFile(join(dir, "events.ndjson.wh-journal"), "utf8");
    expect(journal).not.toMatch(/^2 /m);
    expect((await lstat("/dev/full")).isCharacterDevice()).toBe(true);
  });

  it("leaves devices alone: --dead-letter and --journal /dev/null are written, never removed or renamed over", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), ndjson([trackLine("u1", "m1"), "not json"]));
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--dead-letter", "/dev/null", "--journal", "/dev/null"], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect((await lstat("/dev/null")).isCharacterDevice()).toBe(true);
    expect(receiver.requests).toHaveLength(1);
  });
});

describe("poison lines are invalid lines, never crashes", () => {
  const deep = `{"type":"track","userId":"u1","event":"E","properties":${"[".repeat(5_000)}${"]".repeat(5_000)}}`;

  it("dead-letters a line nested 5,000 levels deep and delivers the rest; a resume of that run does not crash and finds it complete", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(50, 5);
    await writeFile(
      join(dir, "events.ndjson"),
      ndjson([...events.slice(0, 25).map((event) => event.line), deep, ...events.slice(25).map((event) => event.line)]),
    );
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "8"], { cwd: dir });

    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/line 26: invalid: nested deeper than 256 levels/);
    expect(receiver.requests.map(messageIdOf).sort()).toEqual(events.map((event) => event.messageId));
    const again = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/complete already: 50 delivered, 0 skipped by integrations, 1 invalid, 0 failed/);
  });

  it("refuses the nested line in wh send --data (exit 2) and reports it invalid in wh ingest", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "deep.json"), deep);
    await writeFile(join(dir, "events.ndjson"), `${deep}\n`);
    const receiver = await server();

    const sent = await runSigned(["send", "track", "--data", "@deep.json", "--url", receiver.url], { cwd: dir });
    const ingested = await runInProcess(["ingest", "events.ndjson", "--endpoint", `http://127.0.0.1:${receiver.port}`, "--write-key", "wk"], { cwd: dir });

    expect(sent.code).toBe(2);
    expect(sent.stderr).toMatch(/--data: nested deeper than 256 levels/);
    expect(ingested.code, ingested.stderr).toBe(1);
    expect(ingested.stderr).toMatch(/line 1: invalid: nested deeper than 256 levels/);
    expect(receiver.requests).toHaveLength(0);
  });

  it("refuses a line that is not valid UTF-8 instead of signing replacement characters", async () => {
    const dir = await makeTempDir();
    const bad = Buffer.concat([Buffer.from('{"type":"track","userId":"u1","event":"caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]);
    await writeFile(join(dir, "events.ndjson"), Buffer.concat([Buffer.from(`${trackLine("u0", "m0")}\n`), bad]));
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 2: invalid: not valid UTF-8/);
    expect(receiver.requests.map(messageIdOf)).toEqual(["m0"]);
  });

  it("counts a 100 MB line to its end without holding it, and dead-letters its start", async () => {
    const dir = await makeTempDir();
    const out = createWriteStream(join(dir, "events.ndjson"));
    out.write(`${trackLine("u0", "m0")}\n{"type":"track","userId":"u1","event":"`);
    const block = Buffer.alloc(1024 * 1024, "a");
    for (let index = 0; index < 100; index += 1) if (!out.write(block)) await once(out, "drain");
    out.end(`"}\n${trackLine("u2", "m2")}\n`);
    await once(out, "finish");
    const receiver = await server();

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url], { cwd: dir });

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 2: invalid: the line is 104857\d\d\d bytes long, more than the 1 MiB a line may have/);
    expect(receiver.requests.map(messageIdOf).sort()).toEqual(["m0", "m2"]);
    const [record] = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(String(record?.original)).toHaveLength(1024);
  });
});

describe("answers and Retry-After", () => {
  it("retries a malformed HTTP answer like a reset connection, and delivers", async () => {
    let connections = 0;
    const raw = createServer((socket: Socket) => {
      connections += 1;
      const first = connections === 1;
      socket.once("data", () => socket.end(first ? "HTTP/1.1 2OO NOT A STATUS\r\n\r\n" : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    });
    raw.listen(0, "127.0.0.1");
    await once(raw, "listening");
    const { port } = raw.address() as { port: number };
    try {
      const result = await runSigned(["send", "track", "--user-id", "u1", "--event", "E", "--url", `http://127.0.0.1:${port}/`], { cwd: await makeTempDir() });
      expect(result.code, result.stderr).toBe(0);
      expect(connections).toBe(2);
    } finally {
      raw.close();
    }
  });

  it("does not storm on Retry-After: 0: retries wait the backoff", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(64, 64);
    await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
    const receiver = await server({ replies: [{ status: 503, headers: { "Retry-After": "0" } }] });

    const result = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "64", "--retry-window", "3s"], { cwd: dir });

    expect(result.code).toBe(1);
    // With no floor under Retry-After this was 41,243 requests in 6.4 s for 64 events. With the
    // backoff (1 s, 2 s, 4 s ceilings, full jitter) a 3 s window holds a handful of attempts each.
    expect(receiver.requests.length).toBeLessThan(64 * 8);
    const records = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(records).toHaveLength(64);
  });
});

describe("our own shutdown is not a failure", () => {
  it("leaves events cut off by the end of the grace period unfinished (sent again on resume), never dead-lettered", async () => {
    const dir = await makeTempDir();
    const events = manyEvents(20, 20);
    await writeFile(join(dir, "events.ndjson"), ndjson(events.map((event) => event.line)));
    let hanging = true;
    let running: WhProcess | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 7) running?.child.kill("SIGINT");
        return hanging ? "hang" : 200;
      },
    });
    running = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "8", "--timeout", "60s"], { cwd: dir });

    const stopped = await running.exited;

    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).not.toMatch(/: failed:/);
    expect(await exists(join(dir, "events.ndjson.failed.ndjson"))).toBe(false);
    // Only the 8 started count as not finished; the 12 never started were simply not reached.
    expect(stopped.stdout).toMatch(/0 failed, 8 not finished/);
    hanging = false;
    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^20 delivered/m);
  });
});

/** A replay of `invalid` lines then 300 events, stopped with Ctrl-C (exit 130) after 30 deliveries. */
async function interruptedReplay(invalid: readonly string[]): Promise<{ dir: string; receiver: Awaited<ReturnType<typeof server>> }> {
  const dir = await makeTempDir();
  await writeFile(join(dir, "events.ndjson"), ndjson([...invalid, ...manyEvents(300, 7).map((event) => event.line)]));
  let running: WhProcess | undefined;
  const receiver = await server({
    replies: (_request, index) => {
      if (index === 30) running?.child.kill("SIGINT");
      return { status: 200, delayMs: 3 };
    },
  });
  running = spawnSigned(["replay", "events.ndjson", "--url", receiver.url, "--concurrency", "4"], { cwd: dir });
  expect((await running.exited).code).toBe(130);
  return { dir, receiver };
}

describe("the exit code and summary count the whole run", () => {
  it("exits 1 after a clean --resume when the interrupted part had invalid lines, and counts them", async () => {
    const { dir, receiver } = await interruptedReplay(["not json", "{}"]);

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume", "--json"], { cwd: dir });

    expect(resumed.code, resumed.stderr).toBe(1);
    const summary = resumed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((record) => record.summary === true);
    expect(summary).toMatchObject({ invalid: 0, earlier: { invalid: 2 } });
    expect(await readNdjson(join(dir, "events.ndjson.failed.ndjson"))).toHaveLength(2);
  });

  it("says in the summary of a clean --resume that exits 1 that the whole run had invalid lines, and where they are", async () => {
    const { dir, receiver } = await interruptedReplay(["not json"]);

    const resumed = await runSigned(["replay", "events.ndjson", "--url", receiver.url, "--resume"], { cwd: dir });

    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stdout).toMatch(/^\d+ delivered, 0 skipped by integrations, 0 invalid, 0 failed, \d+ already finished before in /m);
    expect(resumed.stdout).toMatch(/^the whole run: 300 delivered, 0 skipped by integrations, 1 invalid, 0 failed$/m);
    expect(resumed.stdout).toContain(`dead letters: ${join(dir, "events.ndjson.failed.ndjson")}`);
  });
});
