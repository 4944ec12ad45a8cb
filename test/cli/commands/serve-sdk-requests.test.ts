import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { STACK_TRACE } from "../../helpers/run-wh.js";
import { goldenRequests, replay } from "./sdk-requests.js";
import { eventually, servedInTempDirs, signedBodies } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

const FILES = ["analytics-python-2.3.4.ndjson", "analytics-go-3.3.0.ndjson", "analytics-go-2.1.1.ndjson"];

describe("wh serve takes the requests real Segment SDKs send, byte for byte", () => {
  for (const mode of ["classic", "actions"]) {
    for (const file of FILES) {
      it(`accepts ${file} and delivers each of its events once (${mode} mode)`, async () => {
        const hook = await receiver();
        const wh = await serve(["--url", hook.url, "--mode", mode]);
        const expected: string[] = [];
        const sentTimes = new Map<string, { timestamp: string; sentAt: string }>();
        for (const sdkRequest of goldenRequests(file)) {
          const answer = await replay(wh.url, sdkRequest);
          expect(answer).toEqual({ status: 200, body: '{"success":true}' });
          const body = JSON.parse(sdkRequest.body) as { sentAt: string; batch: { messageId: string; timestamp: string }[] };
          for (const event of body.batch) sentTimes.set(event.messageId, { timestamp: event.timestamp, sentAt: body.sentAt });
          expected.push(...body.batch.map((event) => event.messageId));
        }
        await eventually(() => hook.requests.length >= expected.length, `${expected.length} deliveries`);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const bodies = signedBodies(hook.requests);
        expect(bodies.map((body) => body.messageId as string).sort()).toEqual([...expected].sort());
        // Actions mode: the client's own timestamp and sentAt texts, offsets and all, as Segment keeps them.
        if (mode === "actions")
          for (const body of bodies)
            expect(body).toMatchObject({
              originalTimestamp: sentTimes.get(body.messageId as string)?.timestamp,
              sentAt: sentTimes.get(body.messageId as string)?.sentAt,
            });
        expect(wh.stderr()).not.toMatch(STACK_TRACE);
      });
    }
  }
});
