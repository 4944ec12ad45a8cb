import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { AppendFile } from "../../src/adapters/append-file.js";
import { TurnLock } from "../../src/adapters/turn-lock.js";
import { mountTmpfs } from "../helpers/tmpfs.js";

// Threads of one process appending to one file (replay --workers' journal and dead-letter file):
// each attaches to it in a worker thread of its own, from the built modules (run `npm run build`
// first), as the bundle's workers do.

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((each) => rm(each, { recursive: true, force: true })));
});

const built = (module: string): string => pathToFileURL(join(import.meta.dirname, "../../dist/adapters", module)).href;

/**
 * A thread that attaches to `file` and appends `records` records named by its `name` (each padded
 * with `pad` bytes, else up to 299), in flushes of 1 to 16, taking the last of a flush back again now and then (as a dead letter whose line the
 * journal could not take); it answers with the records it took back, or the message its flush
 * threw.
 */
const APPENDER = `
const { parentPort, workerData } = require("node:worker_threads");
(async () => {
  const { AppendFile } = await import(workerData.appendFile);
  const { TurnLock } = await import(workerData.turnLock);
  const file = AppendFile.attach(workerData.file, new TurnLock(workerData.lock));
  // Every thread starts appending at once: they overlap for certain.
  const ready = new Int32Array(workerData.ready);
  Atomics.add(ready, 0, 1);
  Atomics.notify(ready, 0);
  for (let seen = Atomics.load(ready, 0); seen < workerData.threads; seen = Atomics.load(ready, 0)) Atomics.wait(ready, 0, seen);
  const takenBack = [];
  let next = 0;
  let flushes = 0;
  try {
    while (next < workerData.records) {
      const size = 1 + ((next * 7) % 16);
      let last;
      for (let i = 0; i < size && next < workerData.records; i += 1, next += 1) {
        last = workerData.name + "-" + next + "-" + "x".repeat(workerData.pad ?? next % 300) + "\\n";
        file.append(last);
      }
      const before = file.count;
      file.flush();
      if (file.count - before !== size && next < workerData.records) throw new Error("counted " + (file.count - before) + " of " + size);
      flushes += 1;
      if (flushes % 5 === 0) {
        file.takeBack(1);
        takenBack.push(last);
      }
      // Another turn of the event loop: the lock is let go between flushes, as a run's recorder lets it go.
      await new Promise((resolve) => setImmediate(resolve));
    }
    answer({ takenBack });
  } catch (error) {
    answer({ error: error.message });
  }
})();
// Once the lock is let go (the parent ends this thread as soon as it hears from it).
function answer(message) {
  setImmediate(() => parentPort.postMessage(message));
}
`;

function appender(data: Record<string, unknown>): Promise<{ takenBack?: string[]; error?: string }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(APPENDER, { eval: true, workerData: { appendFile: built("append-file.js"), turnLock: built("turn-lock.js"), ...data } });
    worker.once("message", (message) => {
      resolve(message);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

describe("AppendFile shared between threads", () => {
  it("threads appending and taking back under one TurnLock leave every record whole and once, and the file's count is theirs together", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wh-shared-append-"));
    dirs.push(dir);
    const path = join(dir, "shared.log");
    const opened = AppendFile.open(path, "the test file", "truncate");
    opened.append("header\n");
    opened.flush();
    const file = opened.share();
    const lock = TurnLock.memory();
    const names = ["a", "b", "c"];
    const ready = new SharedArrayBuffer(4);
    const results = await Promise.all(names.map((name) => appender({ file, lock, name, records: 3000, ready, threads: names.length })));
    expect(results.map((each) => each.error)).toEqual([undefined, undefined, undefined]);
    const takenBack = new Set(results.flatMap((each) => each.takenBack ?? []));
    const lines = (await readFile(path, "utf8")).split("\n");
    expect(lines.pop()).toBe("");
    expect(lines[0]).toBe("header");
    const expected = names
      .flatMap((name) => Array.from({ length: 3000 }, (_, next) => `${name}-${next}-${"x".repeat(next % 300)}\n`))
      .filter((record) => !takenBack.has(record));
    // Each thread's records in its own order, none torn, none lost, none taken back that another wrote.
    expect(new Set(lines.slice(1).map((line) => `${line}\n`))).toEqual(new Set(expected));
    expect(lines.length - 1).toBe(expected.length);
    for (const name of names) {
      const own = lines.filter((line) => line.startsWith(`${name}-`)).map((line) => Number(line.split("-")[1]));
      expect(own).toEqual([...own].sort((x, y) => x - y));
    }
    expect(opened.count).toBe(1 + expected.length);
    opened.close();
  });

  it("a write error one thread meets breaks the file for every thread: another's flush that would fit throws its message, and the sharing thread sees it", async (context) => {
    // Two pages of tmpfs: the first thread's records (20 KB each) cannot fit, the second's (a few bytes) would.
    const disk = mountTmpfs(8 * 1024);
    if (typeof disk === "string") return context.skip(disk);
    try {
      const opened = AppendFile.open(join(disk.dir, "shared.log"), "the test file", "truncate");
      const file = opened.share();
      const lock = TurnLock.memory();
      const alone = { ready: new SharedArrayBuffer(4), threads: 1 };
      const first = await appender({ file, lock, name: "a", records: 10, pad: 20_000, ...alone });
      expect(first.error).toMatch(/^could not write the test file .*shared\.log: /);
      const second = await appender({ file, lock, name: "b", records: 10, pad: 1, ...alone });
      expect(second.error).toBe(first.error);
      expect(opened.broken?.message).toBe(first.error);
      // The cut back left nothing of the record that did not fit, and nothing was written after it.
      expect(await readFile(join(disk.dir, "shared.log"), "utf8")).toBe("");
      opened.close();
    } finally {
      disk.unmount();
    }
  });

  it("refuses to share a file that still holds records it has not written", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wh-shared-append-"));
    dirs.push(dir);
    const opened = AppendFile.open(join(dir, "unflushed.log"), "the test file", "truncate");
    opened.append("pending\n");
    expect(() => opened.share()).toThrow(/has records not written: it cannot be shared/);
    opened.close();
  });
});
