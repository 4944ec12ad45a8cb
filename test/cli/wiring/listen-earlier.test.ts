import { appendFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { earlierEntries } from "../../../src/cli/wiring/listen-earlier.js";
import { hmacHex, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

afterAll(removeTempDirs);

const SECRET = "earlier-secret";

function captureLine(n: number): string {
  const body = JSON.stringify({ type: n % 2 === 0 ? "track" : "identify", userId: `u${n}`, event: `E${n}`, messageId: `m-${n}` });
  return JSON.stringify({ receivedAt: "2026-11-22T10:00:00.000Z", method: "POST", path: "/hook", headers: { "x-signature": hmacHex(SECRET, body) }, body });
}

describe("the earlier requests wh listen --ui --out shows", () => {
  it("are the capture's last 1,000 records, oldest first, numbered from 1, without a record being written", async () => {
    const out = join(await makeTempDir(), "captured.ndjson");
    // Records of a few hundred bytes: the file is read back from its end over many chunks.
    await writeFile(out, `${Array.from({ length: 1_500 }, (_, index) => captureLine(index + 1)).join("\n")}\n`);
    await appendFile(out, captureLine(1_501).slice(0, 40));
    const entries = await earlierEntries(out, SECRET, undefined);
    expect(entries).toHaveLength(1_000);
    expect(entries[0]).toMatchObject({ id: 1, earlier: true, user: "u501", event: "E501", verdict: "valid", path: "/hook" });
    expect(entries.at(-1)).toMatchObject({ id: 1_000, user: "u1500" });
  });

  it("are judged by --filter as this run's are, and none when the file is not there yet", async () => {
    const dir = await makeTempDir();
    const out = join(dir, "captured.ndjson");
    await writeFile(out, `${[1, 2, 3, 4].map(captureLine).join("\n")}\n`);
    const tracks = await earlierEntries(out, undefined, (event) => (event as { type?: string }).type === "track");
    expect(tracks.map((entry) => [entry.id, entry.event, entry.verdict])).toEqual([
      [1, "E2", "unchecked"],
      [2, "E4", "unchecked"],
    ]);
    expect(await earlierEntries(join(dir, "none.ndjson"), SECRET, undefined)).toEqual([]);
  });
});
