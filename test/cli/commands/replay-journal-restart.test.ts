import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { manyEvents, runSigned } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// A replay run again without --resume over a journal of an earlier run of the same input: it
// starts over, as before, but says so before sending. In-process.

const server = closedAfterEach();
afterAll(removeTempDirs);

async function input(count: number): Promise<string> {
  const dir = await makeTempDir();
  await writeFile(
    join(dir, "events.ndjson"),
    `${manyEvents(count, 2)
      .map((event) => event.line)
      .join("\n")}\n`,
  );
  return dir;
}

describe("wh replay over the journal of an earlier run, without --resume", () => {
  it("says the journal records a complete run before sending it all again", async () => {
    const dir = await input(3);
    const receiver = await server();
    const args = ["replay", "events.ndjson", "--url", receiver.url];
    const first = await runSigned(args, { cwd: dir });
    expect(first.code).toBe(0);
    expect(first.stderr).not.toContain("records a");
    const again = await runSigned(args, { cwd: dir });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(
      `the journal ${join(dir, "events.ndjson.wh-journal")} records a complete run of this input: sending all of it again (--resume would send nothing; Ctrl-C stops)`,
    );
    expect(receiver.requests).toHaveLength(6);
  });

  it("says an unfinished run is started over from the top, and --resume would go on", async () => {
    const dir = await input(4);
    const receiver = await server({ replies: [200, 200, { status: 503 }] });
    const args = ["replay", "events.ndjson", "--url", receiver.url, "--retry-window", "0s", "--concurrency", "1"];
    const cut = await runSigned([...args, "--max-attempts", "1"], { cwd: dir });
    expect(cut.code).toBe(1);
    // A failed run still completes its journal: an unfinished one is left by an interrupted run.
    const journal = join(dir, "events.ndjson.wh-journal");
    const text = (await readFile(journal, "utf8")).split("\n");
    await writeFile(journal, `${text[0]}\n1 00000000 d\n`);
    const again = await runSigned(args, { cwd: dir });
    expect(again.stderr).toContain(
      `the journal ${journal} records an unfinished run of this input: starting over from the top (Ctrl-C, then --resume, goes on from where it stopped instead)`,
    );
  });
});
