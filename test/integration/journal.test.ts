import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { Journal } from "../../src/adapters/journal.js";
import { UsageError } from "../../src/core/errors.js";

const dirs: string[] = [];
let dir: string;
let path: string;
let input: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-journal-"));
  dirs.push(dir);
  path = join(dir, "events.ndjson.wh-journal");
  input = join(dir, "events.ndjson");
});

afterAll(async () => {
  await Promise.all(dirs.map((each) => rm(each, { recursive: true, force: true })));
});

async function fileExists(file: string): Promise<boolean> {
  try {
    await readFile(file);
    return true;
  } catch {
    return false;
  }
}

/** Writes a journal the way a run would: finished lines marked and flushed, not completed. */
async function writeJournal(lines: number[], forInput = input): Promise<void> {
  const { journal } = await Journal.open(path, forInput, false);
  for (const line of lines) journal.markFinished(line);
  journal.flush();
  await journal.close(false);
}

describe("Journal", () => {
  it("reads back on resume the lines a previous run marked finished", async () => {
    await writeJournal([1, 3, 4, 1000]);

    const { journal, resumed } = await Journal.open(path, input, true);

    expect(resumed).toBe(4);
    expect([1, 2, 3, 4, 5, 999, 1000, 1001].filter((line) => journal.isFinished(line))).toEqual([1, 3, 4, 1000]);
    await journal.close(false);
  });

  it("has the finished lines on disk after flush, before close (what survives kill -9)", async () => {
    const { journal } = await Journal.open(path, input, false);
    journal.markFinished(7);
    journal.markFinished(8);
    journal.flush();

    const { journal: reader, resumed } = await Journal.open(`${path}`, input, true);
    expect(resumed).toBe(2);
    expect(reader.isFinished(7) && reader.isFinished(8)).toBe(true);
    await reader.close(false);
    await journal.close(false);
  });

  it("keeps earlier lines and appends new ones when resumed again", async () => {
    await writeJournal([1, 2]);
    const first = await Journal.open(path, input, true);
    first.journal.markFinished(5);
    await first.journal.close(false);

    const { journal, resumed } = await Journal.open(path, input, true);

    expect(resumed).toBe(3);
    expect([1, 2, 3, 4, 5].filter((line) => journal.isFinished(line))).toEqual([1, 2, 5]);
    await journal.close(false);
  });

  it("starts afresh without resume, even over an existing journal", async () => {
    await writeJournal([1, 2, 3]);

    const { journal, resumed } = await Journal.open(path, input, false);
    await journal.close(false);

    expect(resumed).toBeUndefined();
    expect(journal.isFinished(1)).toBe(false);
    const again = await Journal.open(path, input, true);
    expect(again.resumed).toBe(0);
    await again.journal.close(false);
  });

  it("reports nothing resumed when there is no journal file", async () => {
    const { journal, resumed } = await Journal.open(path, input, true);
    expect(resumed).toBeUndefined();
    expect(journal.isFinished(1)).toBe(false);
    await journal.close(false);
  });

  it("does not count a last line cut short by a crash (no newline) as finished", async () => {
    await writeJournal([5, 6]);
    // "12\n" was being written when the process died: only "1" reached the file.
    await appendFile(path, "1");

    const { journal, resumed } = await Journal.open(path, input, true);

    expect(journal.isFinished(5) && journal.isFinished(6)).toBe(true);
    expect(journal.isFinished(1)).toBe(false);
    expect(resumed).toBe(2);
    await journal.close(false);
  });

  it("records lines finished after resuming from a torn journal on lines of their own", async () => {
    await writeJournal([5]);
    await appendFile(path, "1");
    const resumedOnce = await Journal.open(path, input, true);
    resumedOnce.journal.markFinished(7);
    await resumedOnce.journal.close(false);

    const { journal } = await Journal.open(path, input, true);

    // Appending "7\n" straight after the torn "1" would record line 17 instead of line 7.
    expect(journal.isFinished(7)).toBe(true);
    expect(journal.isFinished(17)).toBe(false);
    await journal.close(false);
  });

  it("ignores a last line that is not a whole number", async () => {
    await writeJournal([2]);
    await appendFile(path, "\n3x");

    const { journal, resumed } = await Journal.open(path, input, true);

    expect(resumed).toBe(1);
    expect(journal.isFinished(2)).toBe(true);
    expect(journal.isFinished(3)).toBe(false);
    await journal.close(false);
  });

  it("refuses to resume from a journal that belongs to another input", async () => {
    await writeJournal([1], join(dir, "other.ndjson"));

    const opening = Journal.open(path, input, true);

    await expect(opening).rejects.toBeInstanceOf(UsageError);
    await expect(opening).rejects.toThrow(/another input/);
    expect(await readFile(path, "utf8")).toContain("other.ndjson");
  });

  it("refuses to resume from a file that is not a journal", async () => {
    await writeFile(path, "1\n2\n3\n");

    await expect(Journal.open(path, input, true)).rejects.toMatchObject({ exitCode: 2 });
  });

  it("removes the file on close(true) and keeps it on close(false)", async () => {
    const kept = await Journal.open(path, input, false);
    kept.journal.markFinished(1);
    await kept.journal.close(false);
    expect(await fileExists(path)).toBe(true);

    const done = await Journal.open(path, input, true);
    done.journal.markFinished(2);
    await done.journal.close(true);
    expect(await fileExists(path)).toBe(false);
  });
});
