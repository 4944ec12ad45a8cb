import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AppendFile } from "../../src/adapters/append-file.js";

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((each) => rm(each, { recursive: true, force: true })));
});

describe("AppendFile", () => {
  it.each(["truncate", "append"] as const)("opened to %s: records flushed after a take-back follow the records kept, with no gap", async (mode) => {
    const dir = await mkdtemp(join(tmpdir(), "wh-append-file-"));
    dirs.push(dir);
    const path = join(dir, "records.ndjson");
    const file = AppendFile.open(path, "the test file", mode);
    file.append("one\n");
    file.append("two\n");
    file.flush();
    file.takeBack(1);
    file.append("three\n");
    file.flush();
    file.close();
    expect(await readFile(path, "utf8")).toBe("one\nthree\n");
    expect(file.count).toBe(2);
  });
});
