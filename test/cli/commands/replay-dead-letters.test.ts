import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { countByMessageId, readNdjson, runSigned, trackLine } from "./replay-helpers.js";
import { makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

const receiver = closedAfterEach();

afterAll(removeTempDirs);

/** A `wh listen --out` capture record of one request, its body the exact text given. */
function captureLine(body: string): string {
  return JSON.stringify({ receivedAt: "2026-11-21T09:30:09.000Z", method: "POST", path: "/hook", headers: { "content-type": "application/json" }, body });
}

describe("wh replay of its own dead-letter file", () => {
  it("sends each failed record's original once, bodies byte-identical to a replay of the original lines; an invalid one stays invalid for its reason", async () => {
    const dir = await makeTempDir();
    const lines = [
      trackLine("u1", "m1"),
      "not json",
      captureLine('{"version":1,"type":"track","userId":"u2","event":"Captured","properties":{},"messageId":"m2","timestamp":"2026-11-21T09:30:08.276Z"}'),
      trackLine("u3", "m3", { context: { ip: "203.0.113.9" } }),
      // A user's event with a field named like the dead letter's: an event, never taken for one.
      trackLine("u4", "m4", { original: "x", outcome: "failed", reason: "r", line: 1, at: "now" }),
    ];
    await writeFile(join(dir, "events.ndjson"), `${lines.join("\n")}\n`);
    const refusing = await receiver({ replies: [404] });
    const first = await runSigned(["replay", "events.ndjson", "--url", refusing.url], { cwd: dir });
    expect(first.code, first.stderr).toBe(1);
    const deadLetters = await readNdjson(join(dir, "events.ndjson.failed.ndjson"));
    expect(deadLetters.map((record) => record.outcome).sort()).toEqual(["failed", "failed", "failed", "failed", "invalid"]);

    const direct = await receiver();
    await writeFile(join(dir, "valid.ndjson"), `${lines.filter((line) => line !== "not json").join("\n")}\n`);
    expect((await runSigned(["replay", "valid.ndjson", "--url", direct.url, "--concurrency", "1"], { cwd: dir })).code).toBe(0);

    const healed = await receiver();
    const again = await runSigned(["--json", "replay", "events.ndjson.failed.ndjson", "--url", healed.url], { cwd: dir });

    // The invalid line is still invalid, for the reason it was first: exit 1, one invalid.
    expect(again.code, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout.trim().split("\n").at(-1) as string)).toMatchObject({ delivered: 4, invalid: 1, failed: 0 });
    expect([...countByMessageId(healed.requests).values()]).toEqual([1, 1, 1, 1]);
    const bodies = (server: typeof direct): string[] => server.requests.map((request) => request.body.toString("utf8")).sort();
    expect(bodies(healed)).toEqual(bodies(direct));
    const stillInvalid = await readNdjson(join(dir, "events.ndjson.failed.ndjson.failed.ndjson"));
    const firstReason = deadLetters.find((record) => record.outcome === "invalid")?.reason;
    expect(stillInvalid).toMatchObject([{ outcome: "invalid", reason: firstReason }]);
    expect(firstReason).toMatch(/invalid JSON/);
  });

  it("a dead-letter file of that file's replay replays too: the original is unwrapped however deep", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const refusing = await receiver({ replies: [404] });
    expect((await runSigned(["replay", "events.ndjson", "--url", refusing.url], { cwd: dir })).code).toBe(1);
    expect((await runSigned(["replay", "events.ndjson.failed.ndjson", "--url", refusing.url], { cwd: dir })).code).toBe(1);
    const healed = await receiver();
    const result = await runSigned(["replay", "events.ndjson.failed.ndjson.failed.ndjson", "--url", healed.url], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(healed.requests.map((request) => JSON.parse(request.body.toString("utf8")).messageId)).toEqual(["m1"]);
  });
});
