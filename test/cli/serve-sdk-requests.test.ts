import { request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs, STACK_TRACE } from "./run-wh.js";
import { eventually, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

/** One request a real Segment SDK sent (../shared/fixtures/sdk-requests/README.md). */
export interface SdkRequest {
  method: string;
  path: string;
  /** In wire order, without Host and Content-Length. */
  headers: [string, string][];
  body: string;
}

const GOLDEN = new URL("../../../../shared/fixtures/sdk-requests/", import.meta.url);

export function goldenRequests(file: string): SdkRequest[] {
  return readFileSync(new URL(file, GOLDEN), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as SdkRequest);
}

/** Sends a golden request as the SDK did: its headers in their order, its body byte for byte. */
export function replay(url: string, sdkRequest: SdkRequest): Promise<{ status: number; body: string }> {
  const body = Buffer.from(sdkRequest.body, "utf8");
  const target = new URL(sdkRequest.path, url);
  const headers = [...sdkRequest.headers.flat(), "Host", target.host, "Content-Length", String(body.length)];
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(target, { method: sdkRequest.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

const receiver = closedAfterEach();
const running: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((serve) => serve.stop()));
  await removeTempDirs();
});

async function serve(args: readonly string[]): Promise<ServeProcess> {
  const wh = await startServe(args, { cwd: await makeTempDir() });
  running.push(wh);
  return wh;
}

const FILES = ["analytics-python-2.3.4.ndjson", "analytics-go-3.3.0.ndjson", "analytics-go-2.1.1.ndjson"];

describe("wh serve takes the requests real Segment SDKs send, byte for byte", () => {
  for (const mode of ["classic", "actions"]) {
    for (const file of FILES) {
      it(`accepts ${file} and delivers each of its events once (${mode} mode)`, async () => {
        const hook = await receiver();
        const wh = await serve(["--url", hook.url, "--mode", mode]);
        const expected: string[] = [];
        for (const sdkRequest of goldenRequests(file)) {
          const answer = await replay(wh.url, sdkRequest);
          expect(answer.status, answer.body).toBe(200);
          expected.push(...(JSON.parse(sdkRequest.body) as { batch: { messageId: string }[] }).batch.map((event) => event.messageId));
        }
        await eventually(() => hook.requests.length >= expected.length, 10_000, `${expected.length} deliveries`);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const delivered = signedBodies(hook.requests).map((body) => body.messageId as string);
        expect([...delivered].sort()).toEqual([...expected].sort());
        expect(wh.stderr()).not.toMatch(STACK_TRACE);
      });
    }
  }
});
