import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runInProcess } from "../helpers/in-process.js";

// wh check's grading at its boundaries: the last status that passes and the first that fails
// (2xx for an event Segment sends, 4xx for a request that must be refused), one failed request
// inside a case of several, and the exit code when only an advisory case failed.

const SECRET = "s3cret-edges";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** A receiver that verifies the raw bytes; `answer` is given whether the signature held and the request's number (from 1). */
async function receiver(answer: (verified: boolean, number: number) => number): Promise<string> {
  let count = 0;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      count += 1;
      const given = Buffer.from(String(request.headers["x-signature"] ?? ""), "hex");
      const expected = createHmac("sha1", SECRET).update(Buffer.concat(chunks)).digest();
      const verified = given.length === expected.length && timingSafeEqual(given, expected);
      response.writeHead(answer(verified, count), { "content-type": "text/plain" }).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

interface CheckRecord {
  case?: string;
  outcome?: string;
  reason?: string;
  summary?: boolean;
  exitCode?: number;
  warned?: number;
}

async function check(url: string, args: readonly string[]): Promise<{ code: number | null; records: CheckRecord[] }> {
  const result = await runInProcess(["check", url, "--secret", SECRET, "--json", ...args]);
  const records = result.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as CheckRecord);
  return { code: result.code, records };
}

const outcomeOf = (records: readonly CheckRecord[], name: string) => records.find((record) => record.case === name);

describe("wh check's grading at the status boundaries", () => {
  it("passes 299 to an event and 499 to a request it must refuse", async () => {
    const url = await receiver((verified) => (verified ? 299 : 499));
    const { code, records } = await check(url, ["--only", "identify,signature-wrong"]);
    expect(outcomeOf(records, "identify")?.outcome).toBe("pass");
    expect(outcomeOf(records, "signature-wrong")?.outcome).toBe("pass");
    expect(code).toBe(0);
  });

  it("fails an event answered 300: Segment follows no redirect", async () => {
    const url = await receiver((verified) => (verified ? 300 : 401));
    const { code, records } = await check(url, ["--only", "identify,signature-wrong"]);
    expect(outcomeOf(records, "identify")).toMatchObject({ outcome: "fail", reason: expect.stringContaining("Segment does not follow redirects") });
    expect(outcomeOf(records, "signature-wrong")?.outcome).toBe("pass");
    expect(code).toBe(1);
  });

  it("fails a bad signature answered 500 or 399: only a 4xx is a refusal", async () => {
    for (const refusal of [500, 399]) {
      const url = await receiver((verified) => (verified ? 200 : refusal));
      const { code, records } = await check(url, ["--only", "identify,signature-wrong"]);
      expect(outcomeOf(records, "identify")?.outcome).toBe("pass");
      expect(outcomeOf(records, "signature-wrong")).toMatchObject({ outcome: "fail", reason: expect.stringContaining(`HTTP ${refusal}`) });
      expect(code).toBe(1);
    }
  });
});

describe("wh check's grading of a case of several requests", () => {
  it("fails the retry case when only its middle request (the retry) fails", async () => {
    const url = await receiver((verified, number) => (verified && number !== 2 ? 200 : 500));
    const { code, records } = await check(url, ["--only", "retry"]);
    expect(outcomeOf(records, "retry")).toMatchObject({ outcome: "fail", reason: expect.stringContaining("crashed (HTTP 500") });
    expect(code).toBe(1);
  });

  it("warns of two failures inside the burst, neither the first nor the last request, and exits 0: the burst is advisory", async () => {
    // One at a time, so the 7th and 13th requests to arrive are the burst's 7th and 13th.
    const url = await receiver((verified, number) => (verified && number !== 7 && number !== 13 ? 200 : 503));
    const { code, records } = await check(url, ["--only", "burst", "--concurrency", "1"]);
    expect(outcomeOf(records, "burst")).toMatchObject({
      outcome: "warn",
      reason: expect.stringMatching(/^2 of 20 requests failed; the first: crashed \(HTTP 503/),
    });
    expect(records.at(-1)).toMatchObject({ summary: true, warned: 1, exitCode: 0 });
    expect(code).toBe(0);
  });
});
