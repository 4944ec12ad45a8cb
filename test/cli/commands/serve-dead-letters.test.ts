import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Spool } from "../../../src/adapters/spool/spool.js";
import { readSpoolDeadLetters } from "../../../src/adapters/spool/dead-letters.js";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach, type RecordingServer } from "../../helpers/recording-server.js";
import { exists, readNdjson } from "./replay-helpers.js";
import { lines, makeTempDir, run } from "../../helpers/run-wh.js";
import { basic, eventually, post, SECRET, servedInTempDirs } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

const wh = (args: readonly string[], cwd: string) => runInProcess(args, { cwd, env: { WH_SHARED_SECRET: SECRET } });
const bodies = (server: RecordingServer, event: string): string[] =>
  server.requests
    .map((request) => request.body.toString("utf8"))
    .filter((body) => body.includes(event))
    .sort();
const listed = async (
  cwd: string,
): Promise<{ id: string; file: string; fileLine: number; source?: string; outcome: string; reason: string; event: { event: string } }[]> =>
  lines((await wh(["--json", "serve", "dead-letters", "list"], cwd)).stdout).map((line) => JSON.parse(line));

describe("wh serve dead-letters on the spool (no --queue)", () => {
  it("lists the dead letters, puts them back once (the next wh serve delivers each once, as it first sent it), and refuses while wh serve holds the spool", async () => {
    const dir = await makeTempDir();
    let healed = false;
    const hook = await receiver({ replies: (request) => (!healed && request.body.toString().includes("Poison") ? 400 : 200) });
    const first = await serve(["--url", hook.url], dir);
    for (const [userId, event] of [
      ["u1", "Fine"],
      ["u1", "Poison"],
      ["u2", "Poison"],
    ])
      expect((await post(first.url, "/v1/track", JSON.stringify({ userId, event }), { authorization: basic("wk") })).status).toBe(200);
    const deadLetterFile = join(dir, ".wh/serve/dead-letters.ndjson");
    await eventually(() => bodies(hook, "Poison").length === 2 && bodies(hook, "Fine").length === 1, "the deliveries");
    await expect.poll(async () => (await exists(deadLetterFile)) && (await readNdjson(deadLetterFile)).length === 2).toBe(true);
    const refused = bodies(hook, "Poison");

    // Listing reads while wh serve runs; replaying would need its spool.
    const letters = await listed(dir);
    expect(letters.map((letter) => [letter.outcome, letter.event.event, letter.fileLine])).toEqual([
      ["failed", "Poison", 1],
      ["failed", "Poison", 2],
    ]);
    expect(letters[0]?.reason).toContain("HTTP 400");
    const human = await wh(["serve", "dead-letters", "list"], dir);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(letters[1]?.id);
    expect(human.stderr).toContain("2 dead letters");
    const busy = await wh(["serve", "dead-letters", "replay"], dir);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toMatch(/in use by another wh run/);
    await first.stop();
    expect(await readNdjson(deadLetterFile)).toHaveLength(2);

    // wh replay takes the same file: the same bodies as wh serve sent.
    const direct = await receiver();
    expect((await wh(["replay", ".wh/serve/dead-letters.ndjson", "--url", direct.url, "--dead-letter", "again.ndjson"], dir)).code).toBe(0);
    expect(bodies(direct, "Poison")).toEqual(refused);

    const unknown = await wh(["serve", "dead-letters", "replay", "--id", "0123456789abcdef"], dir);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--id 0123456789abcdef: no such dead letter");
    expect(await readNdjson(deadLetterFile)).toHaveLength(2);

    const one = await wh(["serve", "dead-letters", "replay", "--id", letters[0]?.id as string], dir);
    expect(one).toMatchObject({ code: 0, stdout: expect.stringContaining("1 dead letter put back in the spool") });
    // The other keeps its id, though it moved up a line.
    expect((await listed(dir)).map((letter) => [letter.id, letter.fileLine])).toEqual([[letters[1]?.id, 1]]);
    expect((await wh(["serve", "dead-letters", "replay"], dir)).stdout).toContain("1 dead letter put back");
    expect((await wh(["serve", "dead-letters", "replay"], dir)).stdout).toContain("0 dead letters put back");
    expect(await exists(deadLetterFile)).toBe(false);

    healed = true;
    await serve(["--url", hook.url], dir);
    await eventually(() => bodies(hook, "Poison").length === 4, "the replayed events");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bodies(hook, "Poison")).toEqual([...refused, ...refused].sort());
    expect(await listed(dir)).toEqual([]);
  });

  it("finishes a replay cut short after putting a letter back (never twice), and leaves an unreadable line in its file, named by its line", async () => {
    const dir = await makeTempDir();
    const dataDir = join(dir, "data");
    await mkdir(dataDir);
    const event = (messageId: string) => ({ type: "track", userId: "u1", event: "Again", messageId, timestamp: "2026-11-21T09:30:08.276Z", properties: {} });
    const letter = (messageId: string) =>
      JSON.stringify({ line: 0, outcome: "failed", reason: "HTTP 500", at: "2026-11-21T09:30:09.000Z", original: JSON.stringify(event(messageId)) });
    await writeFile(join(dataDir, "dead-letters.ndjson"), `${letter("m-a")}\nnot a dead letter\n${letter("m-b")}\n`);
    // What a crash between the spool's append and the file's rewrite leaves: m-b in both.
    const inSpool = [...readSpoolDeadLetters(dataDir, [])][2]?.id as string;
    const { spool } = await Spool.open(join(dataDir, "spool"), { maxBytes: 1 << 20 });
    await spool.append([JSON.stringify({ source: null, event: event("m-b"), deadLetter: inSpool })]);
    spool.close();

    const listing = await wh(["serve", "dead-letters", "list", "--data-dir", "data"], dir);
    expect(listing.stdout).toMatch(/dead-letters\.ndjson line 2: unreadable: invalid JSON/);

    const replay = await wh(["--json", "serve", "dead-letters", "replay", "--data-dir", "data"], dir);
    expect(replay.code).toBe(1);
    expect(replay.stderr).toMatch(/dead-letters\.ndjson line 2: invalid JSON.*: left in the file/);
    expect(JSON.parse(replay.stdout)).toEqual({ replayed: 1, left: 1 });
    expect(await readFile(join(dataDir, "dead-letters.ndjson"), "utf8")).toBe("not a dead letter\n");

    const hook = await receiver();
    await serve(["--url", hook.url, "--data-dir", "data"], dir);
    await eventually(() => hook.requests.length === 2, "the two events");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bodies(hook, "Again").map((body) => JSON.parse(body).messageId)).toEqual(["m-a", "m-b"]);
  });

  it("puts a source's dead letters back as that source's, even when its name had to be made safe for the file's", async () => {
    const dir = await makeTempDir();
    let healed = false;
    const web = await receiver({ replies: () => (healed ? 200 : 400) });
    const app = await receiver();
    const config = {
      sources: {
        "my web": { writeKey: "wk-web", webhooks: [{ url: web.url }], sharedSecret: SECRET },
        app: { writeKey: "wk-app", webhooks: [{ url: app.url }], sharedSecret: SECRET },
      },
    };
    await writeFile(join(dir, ".whrc.json"), JSON.stringify(config));
    const first = await serve([], dir);
    expect((await post(first.url, "/v1/track", JSON.stringify({ userId: "u1", event: "Poison" }), { authorization: basic("wk-web") })).status).toBe(200);
    const file = join(dir, ".wh/serve/dead-letters.my_web.ndjson");
    await expect.poll(async () => (await exists(file)) && (await readNdjson(file)).length === 1).toBe(true);
    await first.stop();
    expect(await listed(dir)).toMatchObject([{ source: "my web", file: "dead-letters.my_web.ndjson", event: { event: "Poison" } }]);
    expect((await wh(["serve", "dead-letters", "replay"], dir)).code).toBe(0);

    healed = true;
    await serve([], dir);
    await eventually(() => web.requests.length === 2, "the replayed event");
    expect(bodies(web, "Poison")).toHaveLength(2);
    expect(app.requests).toEqual([]);
  });

  it("names a --data-dir that is not there, and sends nothing", async () => {
    const dir = await makeTempDir();
    const result = await wh(["serve", "dead-letters", "list", "--data-dir", "nowhere"], dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--data-dir nowhere: no such directory");
    expect(await exists(join(dir, "nowhere"))).toBe(false);
  });
});

describe("wh serve dead-letters on a dead-letter file larger than the heap", () => {
  it("lists them and puts them all back with a heap a fraction of the file's size: a file is read a chunk at a time, never held", async () => {
    const dir = await makeTempDir();
    const dataDir = join(dir, "data");
    await mkdir(dataDir);
    const padding = "x".repeat(2_000);
    const letter = (index: number) =>
      JSON.stringify({
        line: index,
        outcome: "failed",
        reason: "HTTP 500",
        at: "2026-11-21T09:30:09.000Z",
        original: JSON.stringify({ type: "track", userId: `u${index % 7}`, event: "Big", messageId: `m-${index}`, properties: { padding } }),
      });
    const COUNT = 45_000;
    await writeFile(join(dataDir, "dead-letters.ndjson"), `${Array.from({ length: COUNT }, (_, index) => letter(index)).join("\n")}\n`);
    // About 105 MB of letters; a 56 MB heap holds neither the file's text nor its letters (40 MB
    // was too close to what a replay's batches and the spool's put-back ids need under load).
    const env = { NODE_OPTIONS: "--max-old-space-size=56" };
    const listing = await run(["serve", "dead-letters", "list", "--data-dir", "data"], { cwd: dir, env });
    expect(listing.code).toBe(0);
    expect(lines(listing.stdout)).toHaveLength(COUNT);
    expect(listing.stderr).toContain(`${COUNT} dead letters in`);

    const replay = await run(["--json", "serve", "dead-letters", "replay", "--data-dir", "data"], { cwd: dir, env });
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toEqual({ replayed: COUNT, left: 0 });
    expect(await exists(join(dataDir, "dead-letters.ndjson"))).toBe(false);
  }, 60_000);
});
