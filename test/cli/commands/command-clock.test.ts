import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { numberedIds, virtualClock } from "../../helpers/virtual-clock.js";
import { bodyOf, runSigned, trackLine } from "./replay-helpers.js";
import { lines, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";
import { basic, eventually, post, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

/**
 * Commands take their clock and messageIds from the io (in-process): what they stamp is fixed by
 * the test, and their retries wait on a virtual clock, so no test here waits for a real backoff.
 */

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((serve) => serve.stop()));
  await removeTempDirs();
});

const MOMENT = "2026-03-01T12:00:00.000Z";

describe("stamps from the io's clock and ids", () => {
  it("wh send track --dry-run prints exactly the request its clock and id make", async () => {
    const server = await receiver();
    const args = [
      "send",
      "track",
      "--dry-run",
      "--url",
      server.url,
      "--secret",
      "clock-test-secret",
      "--user-id",
      "u1",
      "--event",
      "Signed Up",
      "--prop",
      "plan=pro",
    ];

    const result = await runInProcess(args, { clock: virtualClock(MOMENT), newId: numberedIds("msg") });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests).toHaveLength(0);
    expect(result.stdout).toBe(
      [
        `POST ${server.url}`,
        "Content-Type: application/json",
        "User-Agent: wh/0.1.0",
        "X-Signature: 34bc1d0c31039a27e4b3021428b439b31310d48e",
        "",
        '{"version":1,"type":"track","userId":"u1","event":"Signed Up","properties":{"plan":"pro"},"messageId":"msg-1","timestamp":"2026-03-01T12:00:00.000Z"}',
        "",
        "",
      ].join("\n"),
    );
  });

  it("wh replay --dry-run gives a line without timestamp or messageId the io's, and keeps a line's own", async () => {
    const dir = await makeTempDir();
    const input = [JSON.stringify({ type: "identify", userId: "u1", traits: { plan: "pro" } }), trackLine("u2", "own-id")];
    await writeFile(join(dir, "events.ndjson"), `${input.join("\n")}\n`);
    const server = await receiver();

    const result = await runSigned(["replay", "events.ndjson", "--url", server.url, "--dry-run"], {
      cwd: dir,
      clock: virtualClock(MOMENT),
      newId: numberedIds("replayed"),
    });

    expect(result.code, result.stderr).toBe(0);
    const bodies = result.stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(bodies).toEqual([
      { version: 1, type: "identify", userId: "u1", traits: { plan: "pro" }, messageId: "replayed-1", timestamp: MOMENT },
      expect.objectContaining({ messageId: "own-id", timestamp: "2026-11-21T09:30:08.276Z" }),
    ]);
  });

  it("wh serve stamps receivedAt, a missing timestamp and messageId from the io, and corrects the client's clock by it", async () => {
    const hook = await receiver();
    const wh = await startServe(["--url", hook.url, "--mode", "actions"], {
      cwd: await makeTempDir(),
      clock: virtualClock(MOMENT),
      newId: numberedIds("served"),
    });
    running.push(wh);
    const headers = { "content-type": "application/json", authorization: basic("wk-clock") };
    const events = [
      { type: "track", userId: "u1", event: "No Stamps" },
      // The client's clock runs 10 s behind its sentAt: the event happened 5 s before it was sent.
      { type: "track", userId: "u1", event: "Skewed", messageId: "client-id", timestamp: "2026-01-01T00:00:00.000Z", sentAt: "2026-01-01T00:00:05.000Z" },
    ];

    expect((await post(wh.url, "/v1/batch", JSON.stringify({ batch: events }), headers)).status).toBe(200);
    await eventually(() => hook.requests.length === 2, "both deliveries");

    const [plain, skewed] = signedBodies(hook.requests);
    expect(plain).toMatchObject({ event: "No Stamps", messageId: "served-1", receivedAt: MOMENT, timestamp: MOMENT });
    expect(skewed).toMatchObject({ event: "Skewed", messageId: "client-id", receivedAt: MOMENT, timestamp: "2026-03-01T11:59:55.000Z" });
  });
});

describe("retries waiting on the io's clock", () => {
  it("wh replay delivers on attempt 4 after three 503s, the backoff slept on the virtual clock", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const server = await receiver({ replies: [503, 503, 503, 200] });
    const clock = virtualClock(MOMENT);

    const result = await runSigned(["--json", "replay", "events.ndjson", "--url", server.url], { cwd: dir, clock });

    expect(result.code, result.stderr).toBe(0);
    expect(server.requests.map(bodyOf).map((body) => body.messageId)).toEqual(["m1", "m1", "m1", "m1"]);
    const record = lines(result.stdout)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((each) => each.line === 1);
    expect(record).toMatchObject({ outcome: "delivered", attempts: 4 });
    // Three waits, each under its full-jitter ceiling (1 s, 2 s, 4 s), all on the virtual clock.
    expect(clock.slept).toHaveLength(3);
    for (const [index, ms] of clock.slept.entries()) expect(ms).toBeLessThan(1_000 * 2 ** index);
    expect(clock.now()).toBe(Date.parse(MOMENT) + clock.slept.reduce((sum, ms) => sum + ms, 0));
  });

  it("wh replay judges --retry-window by the io's clock: an hour's Retry-After twice fills a 2h window, and the event fails", async () => {
    const dir = await makeTempDir();
    await writeFile(join(dir, "events.ndjson"), `${trackLine("u1", "m1")}\n`);
    const server = await receiver({ replies: [{ status: 503, headers: { "retry-after": "3600" } }] });
    const clock = virtualClock(MOMENT);

    const result = await runSigned(["--json", "replay", "events.ndjson", "--url", server.url, "--retry-window", "2h"], { cwd: dir, clock });

    expect(result.code, result.stderr).toBe(1);
    expect(server.requests).toHaveLength(3);
    expect(clock.slept).toEqual([3_600_000, 3_600_000]);
    const record = lines(result.stdout)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((each) => each.line === 1);
    expect(record).toMatchObject({ outcome: "failed", attempts: 3 });
    expect(JSON.stringify(record)).toContain("past the end of the retry window");
  });
});
