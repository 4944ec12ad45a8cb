import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refusalReason } from "../../../src/core/explain-signature.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { runInProcess, startInProcess } from "../../helpers/in-process.js";
import { listeners, post, requestRecords, waitForRecords } from "./listen-helpers.js";
import { hmacHex, lines, makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";

const SECRET = "listen-secret";

afterAll(removeTempDirs);
const { listen, keep } = listeners();

describe("wh listen", () => {
  it("answers 200 to a correctly signed request and 401 to a wrong or missing signature, capturing only the accepted body", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--out", out], { cwd });
    const good = JSON.stringify({
      version: 1,
      type: "track",
      userId: "u1",
      event: "Order Completed",
      properties: { total: 99.5 },
      messageId: "m-1",
      timestamp: "2026-11-21T09:30:08.276Z",
    });
    const bad = JSON.stringify({
      version: 1,
      type: "track",
      userId: "u2",
      event: "Forged",
      properties: {},
      messageId: "m-2",
      timestamp: "2026-11-21T09:30:09.000Z",
    });

    expect(await post(url, good, { "X-Signature": hmacHex(SECRET, good) })).toBe(200);
    expect(await post(url, bad, { "X-Signature": hmacHex("wrong-secret", bad) })).toBe(401);
    expect(await post(url, bad)).toBe(401);
    await waitForRecords(wh, 3);

    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    const [capture, ...others] = lines(await readFile(out, "utf8")).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(others).toEqual([]);
    expect(capture).toMatchObject({ method: "POST", path: "/", body: good, headers: { "x-signature": hmacHex(SECRET, good) } });
    expect(Number.isNaN(Date.parse(String(capture?.receivedAt)))).toBe(false);

    const records = requestRecords(wh);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({ method: "POST", signature: "valid", status: 200, captured: true, body: JSON.parse(good) as unknown });
    expect(records[1]).toMatchObject({ signature: "invalid", status: 401, captured: false });
    expect(records[2]).toMatchObject({ signature: "missing", status: 401, captured: false });
  });

  it("appends to an existing capture file", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const bodies = [
      '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}',
      '{"type":"delete","userId":"u2","timestamp":"2026-11-21T09:36:00.000Z"}',
    ];
    for (const body of bodies) {
      const { wh, url } = await listen(["--secret", SECRET, "--out", "captured.ndjson"], { cwd });
      expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
      await waitForRecords(wh, 1);
      wh.child.kill("SIGINT");
      expect((await wh.exited).code).toBe(0);
    }
    expect(lines(await readFile(out, "utf8")).map((line) => (JSON.parse(line) as { body: string }).body)).toEqual(bodies);
  });

  it("answers with --status and captures nothing when that status is not 2xx", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--status", "503", "--out", out], { cwd });
    const body = '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}';
    expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(503);
    await waitForRecords(wh, 1);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    expect(await readFile(out, "utf8")).toBe("");
  });

  it("accepts unsigned requests without checking when it has no secret", async () => {
    const { wh, url } = await listen([]);
    expect(await post(url, '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}')).toBe(200);
    await waitForRecords(wh, 1);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    expect(requestRecords(wh)[0]).toMatchObject({ signature: "unchecked", status: 200 });
  });

  it("checks signatures with WH_SHARED_SECRET", async () => {
    const { wh, url } = await listen([], { env: { WH_SHARED_SECRET: SECRET } });
    const body = '{"type":"delete","userId":"u1","timestamp":"2026-11-21T09:35:00.000Z"}';
    expect(await post(url, body, { "X-Signature": hmacHex("other", body) })).toBe(401);
    expect(await post(url, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
    await waitForRecords(wh, 2);
    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
  });

  it("prints one human line per request without --json", async () => {
    const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET]);
    keep(wh);
    const stderr = await wh.waitForStderr((text) => /listening on http\S+/.test(text));
    const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
    expect(url).toBeDefined();
    const body = JSON.stringify({
      version: 1,
      type: "track",
      userId: "u1",
      event: "Order Completed",
      properties: {},
      messageId: "m-1",
      timestamp: "2026-11-21T09:30:08.276Z",
    });
    expect(await post(url as string, body, { "X-Signature": hmacHex(SECRET, body) })).toBe(200);
    await wh.waitForStdout((text) => text.endsWith("\n"));
    wh.child.kill("SIGINT");
    const result = await wh.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("200");
    expect(result.stdout).toContain("Order Completed");
    expect(result.stdout).toMatch(/signature verified/);
  });

  it("says on the line of a refused request why its signature was refused, the reason wh verify --explain and the inspector give", async () => {
    const wh = await startInProcess(["listen", "--port", "0", "--secret", SECRET]);
    keep(wh);
    const stderr = await wh.waitForStderr((text) => /listening on http\S+/.test(text));
    const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1] as string;
    const body = JSON.stringify({ type: "track", userId: "u1", event: "Order Completed" });
    const signature = hmacHex(SECRET, `${body}\n`);
    expect(await post(url, body, { "X-Signature": signature })).toBe(401);
    expect(await post(url, body)).toBe(401);
    await wh.waitForStdout((text) => lines(text).length >= 2 && text.endsWith("\n"));
    wh.child.kill("SIGINT");
    const [forged, unsigned] = lines((await wh.exited).stdout);
    expect(forged).toContain(`signature invalid: ${refusalReason(SECRET, Buffer.from(body), signature)}`);
    expect(forged).toContain("the signature matches the body with a trailing newline");
    expect(unsigned).toContain("signature missing: no X-Signature header");
  });

  it("exits 2 on a --port that is not a port number", async () => {
    const result = await runInProcess(["listen", "--port", "http"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--port");
  });
});

describe("wh send to wh listen, end to end", () => {
  it("delivers a signed message that the receiver verifies and captures byte for byte", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--out", out], { cwd });

    const track = [
      "send",
      "track",
      "--url",
      url,
      "--user-id",
      "u1",
      "--event",
      "Order Completed",
      "--prop",
      "total=99.5",
      "--message-id",
      "m-e2e",
      "--timestamp",
      "2026-11-21T10:30:08.276+01:00",
      "--retry-window",
      "1s",
    ];
    const dryRun = await runInProcess([...track, "--dry-run", "--json"], { env: { WH_SHARED_SECRET: SECRET } });
    expect(dryRun.code).toBe(0);
    const planned = JSON.parse(dryRun.stdout) as { body: string; signature: string };
    const sent = await runInProcess([...track, "--json"], { env: { WH_SHARED_SECRET: SECRET } });
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ outcome: "delivered", deliveredTo: url, messageId: "m-e2e" });
    await waitForRecords(wh, 1);

    const forged = await runInProcess(["send", "identify", "--url", url, "--user-id", "u2", "--secret", "wrong-secret", "--retry-window", "1s"]);
    expect(forged.code).toBe(1);
    expect(`${forged.stdout}${forged.stderr}`).toContain("401");
    await waitForRecords(wh, 2);

    wh.child.kill("SIGINT");
    expect((await wh.exited).code).toBe(0);
    const records = requestRecords(wh);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({
      signature: "valid",
      status: 200,
      captured: true,
      body: { type: "track", userId: "u1", event: "Order Completed", properties: { total: 99.5 }, messageId: "m-e2e" },
    });
    expect(records[1]).toMatchObject({ signature: "invalid", status: 401, captured: false });

    const captured = lines(await readFile(out, "utf8")).map((line) => JSON.parse(line) as { body: string; headers: Record<string, string> });
    expect(captured).toHaveLength(1);
    expect(JSON.parse(captured[0]?.body as string)).toMatchObject({ type: "track", messageId: "m-e2e" });
    // The capture holds the very bytes that were signed, and the signature they came with.
    expect(captured[0]?.body).toBe(planned.body);
    expect(captured[0]?.headers["x-signature"]).toBe(planned.signature);
    const verified = await runInProcess(["verify", "--secret", SECRET, "--signature", planned.signature], { input: captured[0]?.body });
    expect(verified.code).toBe(0);
    const table = await runInProcess(["verify", "--capture", out, "--secret", SECRET]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^1\s+POST\s+\/\s+track\s+u1\s+valid$/m);
  });
});

describe("wh listen --forward-to", () => {
  const app = closedAfterEach();

  it("forwards what passes verification with its exact bytes and headers; the app's answer is the sender's", async () => {
    const server = await app({ replies: [{ status: 201, headers: { "x-app": "yes", "content-type": "text/plain" }, body: "created by the app" }] });
    const { wh, url } = await listen(["--secret", SECRET, "--forward-to", server.url]);
    const body = '{"version":1,"type":"track","userId":"u1","event":"Forwarded","messageId":"m-f","timestamp":"2026-11-22T10:00:00.000Z"}';
    const response = await fetch(`${url}some/path`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-signature": hmacHex(SECRET, body), "x-custom": "kept" },
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("x-app")).toBe("yes");
    expect(await response.text()).toBe("created by the app");
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body.toString("utf8")).toBe(body);
    expect(server.requests[0]?.headers).toMatchObject({ "x-signature": hmacHex(SECRET, body), "x-custom": "kept", "content-type": "application/json" });
    // Sent to exactly the --forward-to URL, whatever path the request came to.
    expect(server.requests[0]?.path).toBe("/hook");
    await waitForRecords(wh, 1);
    expect(requestRecords(wh)[0]).toMatchObject({ signature: "valid", status: 201, forwarded: { status: 201, body: "created by the app" } });
    expect(wh.stdout()).toContain('"forwarded"');

    // A forged request is answered 401 here and never reaches the app.
    expect(await post(url, body, { "x-signature": hmacHex("other", body) })).toBe(401);
    expect(server.requests).toHaveLength(1);
  });

  it("answers 502 naming the app when it cannot be reached, and says so in the terminal", async () => {
    const server = await app();
    const down = server.url;
    await server.close();
    const { wh, url } = await listen(["--forward-to", down]);
    const response = await fetch(url, { method: "POST", body: '{"type":"track"}', headers: { "content-type": "application/json" } });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: string }).error).toContain(`could not forward to ${down}`);
    await waitForRecords(wh, 1);
    expect(requestRecords(wh)[0]).toMatchObject({ status: 502, forwarded: { url: down, error: expect.any(String) } });
  });

  it("refuses a --forward-to that is not an http(s) URL", async () => {
    const result = await runInProcess(["listen", "--forward-to", "localhost:3000"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--forward-to");
  });
});

describe("captures with headers", () => {
  const target = closedAfterEach();

  it("are replayed by wh replay (a batch as its events) and checked by wh verify --capture, which names what failed", async () => {
    const cwd = await makeTempDir();
    const out = join(cwd, "captured.ndjson");
    const { wh, url } = await listen(["--secret", SECRET, "--out", out]);
    const one = '{"version":1,"type":"track","userId":"u1","event":"One","messageId":"m-1","timestamp":"2026-11-22T10:00:00.000Z"}';
    const first = '{"type":"track","userId":"u2","event":"A","messageId":"m-2","timestamp":"2026-11-22T10:00:00.000Z"}';
    const batch = `[${first},{"type":"track","userId":"u2","event":"B","messageId":"m-3","timestamp":"2026-11-22T10:00:01.000Z"}]`;
    expect(await post(url, one, { "x-signature": hmacHex(SECRET, one), authorization: "Bearer top-secret" })).toBe(200);
    expect(await post(url, batch, { "x-signature": hmacHex(SECRET, first) })).toBe(200);
    await waitForRecords(wh, 2);
    wh.child.kill("SIGINT");
    await wh.exited;
    const text = await readFile(out, "utf8");
    expect(text).not.toContain("top-secret");
    expect(text).toContain('"authorization":"***"');

    const verified = await runInProcess(["verify", "--capture", out, "--secret", SECRET], { cwd });
    expect(verified.code).toBe(0);
    expect(
      lines(verified.stdout)
        .slice(1)
        .map((line) => line.split(/\s{2,}/).at(-1)),
    ).toEqual(["valid", "valid-batch", "batch-event: event 2 of 2 of a batch signed over its first event"]);

    const receiver = await target();
    const replayed = await runInProcess(["replay", out, "--url", receiver.url, "--mode", "actions"], { cwd, env: { WH_SHARED_SECRET: SECRET } });
    expect(replayed.code).toBe(0);
    expect(receiver.requests.map((request) => (JSON.parse(request.body.toString("utf8")) as { event: string }).event).sort()).toEqual(["A", "B", "One"]);

    // A record whose body was changed, and a line that is no record: named, exit 1.
    const tampered = text.replace('\\"event\\":\\"One\\"', '\\"event\\":\\"Two\\"');
    await writeFile(out, `${tampered}not a record\n`);
    const bad = await runInProcess(["verify", "--capture", out, "--secret", SECRET], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^1\s+POST\s+\/\s+track\s+u1\s+invalid: /m);
    expect(bad.stdout).toMatch(/^4\s+unreadable: not JSON/m);
    expect(bad.stderr).toContain("2 of 4 records verified; 2 did not");
    const json = await runInProcess(["--json", "verify", "--capture", out, "--secret", SECRET], { cwd });
    expect(lines(json.stdout).map((line) => (JSON.parse(line) as { verdict: string }).verdict)).toEqual([
      "invalid",
      "valid-batch",
      "batch-event",
      "unreadable",
    ]);
  });
});

describe("wh listen --ui beyond loopback", () => {
  it("puts a random token in the page's URL and refuses requests without it", async () => {
    const wh = await startInProcess(["listen", "--port", "0", "--host", "0.0.0.0", "--ui", "--json"]);
    keep(wh);
    await wh.waitForStdout((text) => text.includes('"inspector"'));
    const record = JSON.parse(lines(wh.stdout())[0] as string) as { inspector: string };
    const page = new URL(record.inspector);
    expect(page.searchParams.get("token")).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const local = (path: string): string => `http://127.0.0.1:${page.port}${path}`;
    expect((await fetch(local(`/?token=${page.searchParams.get("token")}`))).status).toBe(200);
    const refused = await fetch(local("/"));
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("token");
    expect((await fetch(local("/events?token=wrong"))).status).toBe(403);
    // The resend action also wants the page's own header, whatever the token.
    const resend = await fetch(local(`/api/entries/1/resend?token=${page.searchParams.get("token")}`), { method: "POST", body: "{}" });
    expect(resend.status).toBe(403);
  });
});
