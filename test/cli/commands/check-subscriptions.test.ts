import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach, type RecordedRequest } from "../../helpers/recording-server.js";
import { hmacHex, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

// wh check with subscriptions: the type and batch cases send the user's mapped bodies, to the URL
// checked, with each mapping's method and headers, signed as the destination signs.

const SECRET = "check-subs-secret";
const server = closedAfterEach();
afterAll(removeTempDirs);

/** What the destination signs: the body, or a batch's first element. */
const signedText = (body: string): string => (body.startsWith("[") ? JSON.stringify((JSON.parse(body) as unknown[])[0]) : body);

/** A receiver that verifies X-Signature and takes only its own shape, {who, what} (one, or an array of them). */
function mappedShapeOnly(request: RecordedRequest): number {
  const body = request.body.toString();
  if (request.headers["x-signature"] !== hmacHex(SECRET, signedText(body))) return 401;
  const parsed = JSON.parse(body) as unknown;
  const items = Array.isArray(parsed) ? parsed : [parsed];
  return items.every((item) => Object.keys(item as object).join() === "who,what") ? 200 : 422;
}

const subscription = (name: string, trigger: string, settings: Record<string, unknown>) => ({ name, actionSlug: "send", enabled: true, trigger, settings });
const SHAPE = { who: { "@path": "$.userId" }, what: { "@path": "$.type" } };

async function configDir(): Promise<string> {
  const dir = await makeTempDir();
  const subscriptions = [
    subscription("People", 'type = "identify" or type = "track"', {
      url: "https://their-receiver.example/people",
      method: "PUT",
      headers: { "X-Kind": { "@path": "$.type" } },
      data: SHAPE,
    }),
    subscription("Pages", 'type = "page"', { url: "https://their-receiver.example/pages", enable_batching: true, data: SHAPE }),
  ];
  await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sharedSecret: SECRET, subscriptions }));
  return dir;
}

const outcomes = (stdout: string) =>
  Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { case?: string; outcome?: string; skipped?: string })
      .filter((record) => record.case !== undefined)
      .map((record) => [record.case, record.outcome]),
  );

describe("wh check with the config's subscriptions", () => {
  it("sends each type case's event as each matching subscription maps it, to the URL checked, signed over the (first) data; a type no trigger matches is skipped", async () => {
    const receiver = await server({ replies: mappedShapeOnly });
    const cwd = await configDir();
    const result = await runInProcess(["--json", "check", receiver.url, "--only", "identify,track,page,group,batch", "--batch-size", "6"], { cwd });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(outcomes(result.stdout)).toEqual({ identify: "pass", track: "pass", page: "pass", group: "skip", batch: "pass" });
    expect(receiver.requests.every((request) => request.path === "/hook")).toBe(true);
    const [identify, track, page, batch] = receiver.requests;
    expect(identify?.method).toBe("PUT");
    expect(identify?.headers["x-kind"]).toBe("identify");
    expect(JSON.parse(identify?.body.toString() ?? "")).toMatchObject({ what: "identify" });
    expect(track?.headers["x-kind"]).toBe("track");
    // Pages batches: a lone page is an array of one, the batch case's two pages one request.
    expect(page?.method).toBe("POST");
    expect(JSON.parse(page?.body.toString() ?? "")).toEqual([expect.objectContaining({ what: "page" })]);
    expect(JSON.parse(batch?.body.toString() ?? "")).toEqual([expect.objectContaining({ what: "page" }), expect.objectContaining({ what: "page" })]);
    expect(receiver.requests).toHaveLength(4);
  });

  it("--subscriptions FILE does the same; without them the receiver that takes only its shape fails the type cases", async () => {
    const receiver = await server({ replies: mappedShapeOnly });
    const dir = await configDir();
    const { subscriptions } = JSON.parse(await readFile(join(dir, ".whrc.json"), "utf8")) as { subscriptions: unknown };
    await writeFile(join(dir, "subs.json"), JSON.stringify({ data: { subscriptions } }));
    const plain = await makeTempDir();
    const without = await runInProcess(["--json", "check", receiver.url, "--secret", SECRET, "--mode", "actions", "--only", "identify"], { cwd: plain });
    expect(without.code).toBe(1);
    const withFile = await runInProcess(
      ["--json", "check", receiver.url, "--secret", SECRET, "--subscriptions", join(dir, "subs.json"), "--only", "identify"],
      {
        cwd: plain,
      },
    );
    expect(withFile.code, withFile.stdout).toBe(0);
    expect(outcomes(withFile.stdout)).toEqual({ identify: "pass" });
  });

  it("--dry-run shows each subscription's method and mapped body; --mode classic is refused", async () => {
    const cwd = await configDir();
    const dry = await runInProcess(["check", "http://127.0.0.1:9/hook", "--only", "identify", "--dry-run"], { cwd });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^PUT http:\/\/127\.0\.0\.1:9\/hook\n/m);
    expect(dry.stdout).toMatch(/X-Kind: identify/);
    expect(dry.stdout).toMatch(/\{"who":"[^"]+","what":"identify"\}/);
    const classic = await runInProcess(["check", "http://127.0.0.1:9/hook", "--mode", "classic"], { cwd });
    expect(classic.code).toBe(2);
    expect(classic.stderr).toContain("--mode classic cannot be used with subscriptions");
  });
});
