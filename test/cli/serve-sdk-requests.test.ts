import { afterAll, describe, expect, it } from "vitest";
import { closedAfterEach } from "../helpers/recording-server.js";
import { makeTempDir, removeTempDirs, STACK_TRACE } from "./run-wh.js";
import { goldenRequests, replay } from "./sdk-requests.js";
import { eventually, signedBodies, startServe, type ServeProcess } from "./serve-helpers.js";

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
