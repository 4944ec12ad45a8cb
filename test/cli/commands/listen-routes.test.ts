import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runInProcess } from "../../helpers/in-process.js";
import { listeners, post, requestRecords, waitForRecords } from "./listen-helpers.js";
import { hmacHex, lines, makeTempDir, removeTempDirs } from "../../helpers/run-wh.js";

const SECRET = "routes-secret";

afterAll(removeTempDirs);
const { listen } = listeners();
const app = closedAfterEach();

const event = (fields: Record<string, unknown>): string =>
  JSON.stringify({ userId: "u1", messageId: `m-${JSON.stringify(fields)}`, timestamp: "2026-11-22T10:00:00.000Z", ...fields });

describe("wh listen --filter and --route", () => {
  it("forwards each event to the first route it matches, answers one no route takes, and neither prints nor forwards one the filter leaves out", async () => {
    const orders = await app({ replies: [{ status: 201, body: "order taken" }] });
    const users = await app({ replies: [{ status: 202, body: "user taken" }] });
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(
      [
        "--secret",
        SECRET,
        "--out",
        out,
        "--filter",
        'type = "track" or type = "identify"',
        "--route",
        `event = "Order Completed" => ${orders.url}`,
        "--route",
        `type = "identify" => ${users.url}`,
      ],
      { cwd },
    );
    const order = event({ type: "track", event: "Order Completed", properties: { total: 30 } });
    const identify = event({ type: "identify", traits: { email: "a@example.com" } });
    const other = event({ type: "track", event: "Signed Up" });
    const page = event({ type: "page", name: "Home" });
    const batch = `[${event({ type: "track", event: "Viewed" })},${event({ type: "track", event: "Order Completed", n: 2 })}]`;
    const signed = (body: string) => ({ "x-signature": hmacHex(SECRET, body) });

    expect(await post(url, order, signed(order))).toBe(201);
    expect(await post(url, page, signed(page))).toBe(200);
    expect(await post(url, identify, signed(identify))).toBe(202);
    expect(await post(url, other, signed(other))).toBe(200);
    // A batch goes whole (its signature covers all of it) to the route one of its events matches.
    expect(await post(url, batch, signed(batch))).toBe(201);
    // A forged request is shown, refused, whatever its event: it says something is wrong.
    expect(await post(url, page, { "x-signature": hmacHex("wrong", page) })).toBe(401);

    expect(orders.requests.map((request) => request.body.toString("utf8"))).toEqual([order, batch]);
    expect(users.requests.map((request) => request.body.toString("utf8"))).toEqual([identify]);

    await waitForRecords(wh, 5);
    const records = requestRecords(wh);
    expect(records.map((record) => [record.status, (record.forwarded as { url?: string } | undefined)?.url, record.unrouted])).toEqual([
      [201, orders.url, undefined],
      [202, users.url, undefined],
      [200, undefined, true],
      [201, orders.url, undefined],
      [401, undefined, undefined],
    ]);
    // The signed page view matched no --filter: answered and captured, never printed.
    expect(records.filter((record) => JSON.stringify(record.body).includes("Home")).map((record) => record.status)).toEqual([401]);
    const captured = lines(await readFile(out, "utf8")).map((line) => JSON.parse(line) as { body: string });
    expect(captured.map((record) => record.body)).toContain(page);
    expect(captured).toHaveLength(6);

    wh.child.kill("SIGINT");
    const exited = await wh.exited;
    expect(exited.code).toBe(0);
    expect(exited.stderr).toContain(`routing event = "Order Completed" => ${orders.url}, type = "identify" => ${users.url}; the rest: answering 200`);
    expect(exited.stderr).toContain("stopped (1 request not matching --filter: answered and captured, not shown)");
  });

  it("sends what no route takes to --forward-to, and says in the terminal where each went", async () => {
    const tracks = await app();
    const rest = await app({ replies: [204] });
    const { wh, url } = await listen(["--route", `type = "track" => ${tracks.url}`, "--forward-to", rest.url]);
    const track = event({ type: "track", event: "A" });
    const group = event({ type: "group", groupId: "g1" });
    expect(await post(url, track)).toBe(200);
    expect(await post(url, group)).toBe(204);
    expect(tracks.requests.map((request) => request.body.toString("utf8"))).toEqual([track]);
    expect(rest.requests.map((request) => request.body.toString("utf8"))).toEqual([group]);
    await waitForRecords(wh, 2);
    expect(requestRecords(wh).map((record) => (record.forwarded as { url: string }).url)).toEqual([tracks.url, rest.url]);
  });

  it("refuses FQL that is not valid, with FQL's reason, and a --route without '=> URL'", async () => {
    const badFql = await runInProcess(["listen", "--filter", 'type * "track"']);
    expect(badFql.code).toBe(2);
    expect(badFql.stderr).toMatch(/--filter: not valid FQL \(.+\): "type \* \\"track\\""/);
    const noUrl = await runInProcess(["listen", "--route", 'type = "track"']);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain(`--route "type = \\"track\\"": expected 'FQL => URL'`);
    const notHttp = await runInProcess(["listen", "--route", 'type = "track" => localhost:4000']);
    expect(notHttp.code).toBe(2);
    expect(notHttp.stderr).toContain('--route "localhost:4000": expected an http or https URL');
  });
});
