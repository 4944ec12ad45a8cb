import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { completionScript } from "../../../src/cli/wiring/completion.js";
import { SAMPLES } from "../../../src/core/samples/catalogue.js";
import { userOf } from "../../../src/core/shard.js";
import { type RecordedRequest, type RecordingServer, serverForEachTest } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { lines, makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";

// wh samples, wh send --sample and wh samples generate, in-process, against a recording server.

let server: RecordingServer;
afterAll(removeTempDirs);

const bodies = (requests: readonly RecordedRequest[]): Array<Record<string, unknown>> =>
  requests.map((request) => JSON.parse(request.body.toString("utf8")) as Record<string, unknown>);

describe("wh samples", () => {
  it("lists the catalogue by part of the Spec: name, type and the fields each fills", async () => {
    const result = await runInProcess(["samples"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ecommerce https:\/\/segment\.com\/docs\/connections\/spec\/ecommerce\/v2\/$/m);
    expect(result.stdout).toMatch(/^ {2}Order Completed +track +checkout_id, order_id, .*products$/m);
    expect(result.stdout).toMatch(/^ {2}Signed Up +track +type, first_name, .*context\.groupId$/m);
    expect(result.stdout).toMatch(/^ {2}Identify +identify +email, firstName/m);
    expect(result.stdout).toMatch(/^ {2}Alias +alias +previousId$/m);
    for (const sample of SAMPLES) expect(result.stdout).toContain(`  ${sample.name} `);
  });

  it("--json: one line per sample with its whole message; --spec keeps one part", async () => {
    const result = await runInProcess(["--json", "samples", "--spec", "video"]);
    expect(result.code, result.stderr).toBe(0);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.length).toBeGreaterThan(10);
    expect(records.every((record) => record.spec === "video" && record.type === "track")).toBe(true);
    expect(records.find((record) => record.name === "Video Content Playing")).toMatchObject({
      fields: expect.arrayContaining(["session_id", "asset_id", "position"]),
      message: { type: "track", event: "Video Content Playing", properties: { session_id: expect.any(String), position: 10 } },
    });
    const bad = await runInProcess(["samples", "--spec", "retail"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--spec "retail": expected ecommerce, b2b-saas, video, mobile or semantic');
  });
});

describe("wh send --sample", () => {
  serverForEachTest((started) => (server = started));
  const send = (args: readonly string[]) => runInProcess(["send", ...args, "--url", server.url, "--retry-window", "1s"]);

  it("sends the catalogue's event, its type from the sample, with the Spec's fields", async () => {
    const result = await send(["--sample", "Order Completed"]);
    expect(result.code, result.stderr).toBe(0);
    const [body] = bodies(server.requests);
    expect(body).toMatchObject({ version: 1, type: "track", event: "Order Completed", userId: "user-7f3a21" });
    expect(body?.properties).toMatchObject({
      order_id: "ord-50412",
      total: 99.5,
      currency: "EUR",
      products: [{ product_id: "p-1002" }, { product_id: "p-1004" }],
    });
  });

  it("--prop, --trait and --user-id change it; a name in any case finds it", async () => {
    const track = await send(["track", "--sample", "order completed", "--prop", "total=42", "--prop", "coupon=NONE", "--user-id", "u-9"]);
    expect(track.code, track.stderr).toBe(0);
    const identify = await send(["--sample", "Identify", "--trait", "firstName=Ada", "--trait", "address.city=Lyon"]);
    expect(identify.code, identify.stderr).toBe(0);
    const [order, person] = bodies(server.requests);
    expect(order).toMatchObject({ userId: "u-9", properties: { total: 42, coupon: "NONE", order_id: "ord-50412" } });
    expect(person).toMatchObject({ type: "identify", traits: { firstName: "Ada", lastName: "Haddad", address: { city: "Lyon", country: "GB" } } });
  });

  it("refuses a name not in the catalogue with the nearest, a type the sample is not, and nothing at all; sends nothing", async () => {
    const unknown = await send(["--sample", "Order Complete"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--sample: no sample is named "Order Complete" (did you mean "Order Completed"?)');
    const mismatch = await send(["identify", "--sample", "Order Completed"]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain('--sample "Order Completed" is a track, not a identify');
    const neither = await send([]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("wh send needs a message type or --sample");
    expect(`${unknown.stderr}${mismatch.stderr}${neither.stderr}`).not.toMatch(STACK_TRACE);
    expect(server.requests).toHaveLength(0);
  });

  it("completion offers the sample names, each as one word, and the new flags", () => {
    const bash = completionScript("bash");
    expect(bash).toMatch(/--sample\) local IFS=\$'\\n' .*compgen -W \$'Products Searched\\nProduct List Viewed\\n.*\\nAlias'/);
    expect(bash).toContain('"samples generate") words="--users --events --seed --start --out --help"');
    expect(bash).toContain('--spec) COMPREPLY=( $(compgen -W "ecommerce b2b-saas video mobile semantic" -- "$cur") )');
    expect(completionScript("fish")).toContain("-l sample -r -a \"'Products Searched' 'Product List Viewed'");
  });
});

describe("wh samples generate", () => {
  serverForEachTest((started) => (server = started));

  it("writes the same NDJSON for the same seed, another for another", async () => {
    const generate = (seed: string) => runInProcess(["samples", "generate", "--users", "8", "--events", "300", "--seed", seed]);
    const [first, again, other] = await Promise.all([generate("7"), generate("7"), generate("8")]);
    expect(first.code, first.stderr).toBe(0);
    expect(lines(first.stdout)).toHaveLength(300);
    expect(again.stdout).toBe(first.stdout);
    expect(other.stdout).not.toBe(first.stdout);
    expect(first.stderr).toBe("");
  });

  it("without --seed, prints the seed it used, which writes the same lines again", async () => {
    const first = await runInProcess(["samples", "generate", "--events", "50"]);
    const seed = /^seed (\d+) \(--seed \1 writes the same lines again\)$/m.exec(first.stderr)?.[1];
    expect(seed, first.stderr).toBeDefined();
    const again = await runInProcess(["samples", "generate", "--events", "50", "--seed", seed as string]);
    expect(again.stdout).toBe(first.stdout);
  });

  it("--out writes a file that wh replay delivers whole, each user's events in order", async () => {
    const cwd = await makeTempDir();
    const made = await runInProcess(["samples", "generate", "--users", "5", "--events", "120", "--seed", "11", "--out", "traffic.ndjson"], { cwd });
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toBe("");
    expect(made.stderr).toContain("wrote 120 events of 5 users to traffic.ndjson (seed 11)");
    const written = lines(await readFile(join(cwd, "traffic.ndjson"), "utf8")).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(written).toHaveLength(120);

    const replayed = await runInProcess(["replay", "traffic.ndjson", "--url", server.url, "--retry-window", "1s"], { cwd });
    expect(replayed.code, replayed.stderr).toBe(0);
    const received = bodies(server.requests);
    expect(received.map((body) => body.messageId).sort()).toEqual(written.map((message) => message.messageId).sort());
    // Each user's order, as replay keys users (userId, else anonymousId): the receiver saw the file's.
    const users = new Set(written.map((message) => userOf(message)));
    expect(users.size).toBeGreaterThan(5);
    for (const user of users) {
      const inFile = written.filter((message) => userOf(message) === user).map((message) => message.messageId);
      expect(received.filter((body) => userOf(body) === user).map((body) => body.messageId)).toEqual(inFile);
    }
  });

  it("writes lines wh ingest sends whole to an ingestion API, in batches", async () => {
    const cwd = await makeTempDir();
    const made = await runInProcess(["samples", "generate", "--users", "3", "--events", "45", "--seed", "5", "--out", "t.ndjson"], { cwd });
    expect(made.code, made.stderr).toBe(0);
    const ingested = await runInProcess(["ingest", "t.ndjson", "--write-key", "wk_samples_1", "--endpoint", `http://127.0.0.1:${server.port}`], { cwd });
    expect(ingested.code, ingested.stderr).toBe(0);
    const batches = bodies(server.requests).map((body) => body.batch as Array<Record<string, unknown>>);
    expect(batches.map((batch) => batch.length)).toEqual([20, 20, 5]);
    const written = lines(await readFile(join(cwd, "t.ndjson"), "utf8")).map((line) => (JSON.parse(line) as Record<string, unknown>).messageId);
    expect(batches.flat().map((message) => message.messageId)).toEqual(written);
  });

  it("Ctrl-C stops a long --out run with exit 130 and leaves neither FILE nor a part of it", async () => {
    const cwd = await makeTempDir();
    const running = await startInProcess(["samples", "generate", "--events", "50000000", "--out", "big.ndjson"], { cwd });
    await new Promise((resolve) => setTimeout(resolve, 300));
    running.child.kill("SIGINT");
    const result = await running.exited;
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/interrupted after \d+ events; big\.ndjson was not written/);
    expect(await readdir(cwd)).toEqual(["package.json"]);
  });

  it("refuses a bad --start or --events before writing anything", async () => {
    const cwd = await makeTempDir();
    const start = await runInProcess(["samples", "generate", "--start", "yesterday", "--out", "t.ndjson"], { cwd });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain('--start "yesterday": expected an ISO 8601 time');
    const events = await runInProcess(["samples", "generate", "--events", "0"], { cwd });
    expect(events.code).toBe(2);
    expect(events.stdout).toBe("");
    await expect(readFile(join(cwd, "t.ndjson"))).rejects.toThrow();
  });
});
