import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { messageIdOf, readNdjson, runSigned, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

const receiver = closedAfterEach();

afterAll(removeTempDirs);

/** A `wh listen --out` capture record of one request, its body the exact text given. */
function captureLine(body: string, batch?: { index: number; count: number }): string {
  return JSON.stringify({
    receivedAt: "2026-11-21T09:30:09.000Z",
    method: "POST",
    path: "/hook",
    headers: { "content-type": "application/json" },
    body,
    ...(batch === undefined ? {} : { batch }),
  });
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

describe("wh replay --message-id", () => {
  it("sends exactly the chosen events of a capture file, each once, and says which id no event has", async () => {
    const dir = await makeTempDir();
    const lines = [
      captureLine(trackLine("u1", "m1")),
      captureLine(trackLine("u2", "m2"), { index: 0, count: 2 }),
      captureLine(trackLine("u3", "m3"), { index: 1, count: 2 }),
      captureLine(trackLine("u4", "m4")),
      // A line without a messageId: never one of the chosen.
      captureLine(JSON.stringify({ type: "track", userId: "u5", event: "No id" })),
    ];
    await writeFile(join(dir, "capture.ndjson"), `${lines.join("\n")}\n`);
    const server = await receiver();
    const run = await runSigned(
      ["--json", "replay", "capture.ndjson", "--url", server.url, "--message-id", "m3", "--message-id", "m1", "--message-id", "m9", "--message-id", "m1"],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.map(messageIdOf).sort()).toEqual(["m1", "m3"]);
    expect(JSON.parse(run.stdout.trim().split("\n").at(-1) as string)).toMatchObject({ delivered: 2, failed: 0, skipped: 0 });
    expect(run.stderr).toContain('--message-id "m9": no event of capture.ndjson has it; nothing sent for it');
    expect(run.stderr).not.toContain('"m1": no event');
  });

  it("resends one event of a dead-letter file; its journal is its own, so an interrupted run of the whole file still resumes", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${["a", "b", "c"].map((id) => trackLine(`u-${id}`, id)).join("\n")}\n`);
    const refusing = await receiver({ replies: [404] });
    expect((await runSigned(["replay", "events.ndjson", "--url", refusing.url], { cwd: dir })).code).toBe(1);
    const journal = await readFile(join(dir, "events.ndjson.wh-journal"), "utf8");

    const healed = await receiver();
    const one = await runSigned(["replay", "events.ndjson.failed.ndjson", "--url", healed.url, "--message-id", "b"], { cwd: dir });
    expect(one.code, one.stderr).toBe(0);
    expect(idsAt(healed)).toEqual(["b"]);
    // The whole file's journal and dead letters are untouched; this run's are named for its choice.
    expect(await readFile(join(dir, "events.ndjson.wh-journal"), "utf8")).toBe(journal);
    expect((await readNdjson(join(dir, "events.ndjson.failed.ndjson"))).length).toBe(3);
    expect(await exists(join(dir, "events.ndjson.failed.ndjson.wh-journal"))).toBe(false);

    // Resuming with another choice than the journal's is refused, naming both.
    const other = await runSigned(["replay", "events.ndjson.failed.ndjson", "--url", healed.url, "--message-id", "c", "--resume", "--journal", "j"], {
      cwd: dir,
    });
    expect(other.code).toBe(0);
    const refused = await runSigned(["replay", "events.ndjson.failed.ndjson", "--url", healed.url, "--message-id", "a", "--resume", "--journal", "j"], {
      cwd: dir,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("records only the events c of");
    expect(idsAt(healed)).toEqual(["b", "c"]);
  });
});

function idsAt(recording: { requests: Parameters<typeof messageIdOf>[0][] }): string[] {
  return recording.requests.map(messageIdOf).sort();
}
