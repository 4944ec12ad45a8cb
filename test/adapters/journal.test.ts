import { spawnSync } from "node:child_process";
import { appendFile, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { Journal, type FinishedOutcome, type JournalHeader, type JournalState } from "../../src/adapters/journal.js";
import { UsageError } from "../../src/core/errors.js";

const dirs: string[] = [];
let dir: string;
let path: string;
let header: JournalHeader;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-journal-"));
  dirs.push(dir);
  path = join(dir, "events.ndjson.wh-journal");
  header = { command: "replay", input: join(dir, "events.ndjson"), destination: { fingerprint: "abc", description: "http://127.0.0.1:4000/", parts: {} } };
});

afterAll(async () => {
  await Promise.all(dirs.map((each) => rm(each, { recursive: true, force: true })));
});

const text = (line: number): string => `{"type":"track","line":${line}}`;

/** Writes a journal the way a run would: finished lines marked and flushed, not completed. */
async function writeJournal(lines: number[], outcome: FinishedOutcome = "delivered", forHeader = header): Promise<void> {
  const { journal } = await Journal.open(path, forHeader, false);
  for (const line of lines) journal.markFinished({ number: line, original: text(line) }, outcome);
  journal.flush();
  journal.close();
}

function finishedLines(state: JournalState): number[] {
  return state.kind === "partial" ? [...state.finished.lines] : [];
}

describe("Journal", () => {
  it("reads back on resume the lines a previous run marked finished, sorted, with their outcomes counted", async () => {
    await writeJournal([1000, 3, 1, 4]);
    await (async () => {
      const { journal } = await Journal.open(path, header, true);
      journal.markFinished({ number: 7, original: text(7) }, "failed");
      journal.close();
    })();

    const { journal, state } = await Journal.open(path, header, true);
    journal.close();

    expect(finishedLines(state)).toEqual([1, 3, 4, 7, 1000]);
    expect(state.kind === "partial" && state.counts).toEqual({ delivered: 4, skipped: 0, filtered: 0, unmatched: 0, invalid: 0, failed: 1 });
  });

  it("starts afresh without resume, even over an existing journal", async () => {
    await writeJournal([1, 2, 3]);
    (await Journal.open(path, header, false)).journal.close();

    const { journal, state } = await Journal.open(path, header, true);
    journal.close();

    expect(finishedLines(state)).toEqual([]);
    expect(state.kind).toBe("partial");
  });

  it("finds nothing to resume when there is no journal file", async () => {
    const { journal, state } = await Journal.open(path, header, true);
    journal.close();
    expect(state.kind).toBe("fresh");
  });

  it("drops a last record cut short by a crash, and appends the next ones on lines of their own", async () => {
    await writeJournal([5, 6]);
    await appendFile(path, "1");
    const resumedOnce = await Journal.open(path, header, true);
    resumedOnce.journal.markFinished({ number: 7, original: text(7) }, "delivered");
    resumedOnce.journal.close();

    const { journal, state } = await Journal.open(path, header, true);
    journal.close();

    expect(finishedLines(state)).toEqual([5, 6, 7]);
  });

  it.each([
    ["a line number past 32 bits", "4294967297 0000abcd d"],
    ["line number 0", "0 0000abcd d"],
    ["a record without a hash", "12 d"],
    ["an unknown outcome", "12 0000abcd x"],
    ["text", "hello"],
  ])("refuses (exit 2) a journal holding %s", async (_name, record) => {
    await writeJournal([1]);
    await appendFile(path, `${record}\n`);

    await expect(Journal.open(path, header, true)).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/corrupt at its line 3/) });
  });

  it("refuses a journal that records a line twice", async () => {
    await writeJournal([1]);
    await appendFile(path, `1 ${"0".repeat(8)} d\n`);
    await expect(Journal.open(path, header, true)).rejects.toThrow(/records line 1 twice/);
  });

  it("refuses to resume from a journal that belongs to another input, naming it", async () => {
    await writeJournal([1], "delivered", { ...header, input: join(dir, "other.ndjson") });

    const opening = Journal.open(path, header, true);

    await expect(opening).rejects.toBeInstanceOf(UsageError);
    await expect(opening).rejects.toThrow(/belongs to `wh replay` of .*other\.ndjson/);
  });

  it("refuses to resume toward another destination, naming the original one", async () => {
    await writeJournal([1]);

    const opening = Journal.open(path, { ...header, destination: { fingerprint: "other", description: "http://example.test/", parts: {} } }, true);

    await expect(opening).rejects.toThrow(/delivered to http:\/\/127\.0\.0\.1:4000\/; this one would deliver to http:\/\/example\.test\//);
  });

  it("refuses to resume from a file that is not a journal", async () => {
    await writeFile(path, "1\n2\n3\n");
    await expect(Journal.open(path, header, true)).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/not a journal/) });
  });

  it("records a complete run as its digest and counts, and reads that back", async () => {
    const { journal } = await Journal.open(path, header, false);
    journal.markFinished({ number: 1, original: text(1) }, "delivered");
    journal.complete({ lines: 2, digest: "sha256:00", counts: { delivered: 1, skipped: 0, filtered: 0, unmatched: 0, invalid: 1, failed: 0 } });
    journal.close();

    const reopened = await Journal.open(path, header, true);
    reopened.journal.close();

    expect(reopened.state).toEqual({
      kind: "complete",
      lines: 2,
      digest: "sha256:00",
      counts: { delivered: 1, skipped: 0, filtered: 0, unmatched: 0, invalid: 1, failed: 0 },
    });
  });

  it("lets one process at a time hold a journal, naming the holder", async () => {
    const first = await Journal.open(path, header, false);

    await expect(Journal.open(path, header, true)).rejects.toThrow(new RegExp(`in use by another wh run: process ${process.pid} on `));

    first.journal.close();
    (await Journal.open(path, header, true)).journal.close();
  });

  it("takes over a lock left by a process that is gone", async () => {
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    await writeFile(`${path}.lock`, JSON.stringify({ pid: Number(dead.stdout), host: hostname(), startedAt: "2026-01-01T00:00:00.000Z", token: "dead" }));

    const { journal } = await Journal.open(path, header, false);
    journal.close();

    await expect(readFile(`${path}.lock`)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses to write through a symbolic link, and leaves the link's target alone", async () => {
    const target = join(dir, "precious.txt");
    await writeFile(target, "keep me\n");
    await symlink(target, path);

    await expect(Journal.open(path, header, false)).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/symbolic link/) });
    expect(await readFile(target, "utf8")).toBe("keep me\n");
  });
});
