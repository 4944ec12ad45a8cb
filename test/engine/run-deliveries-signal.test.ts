import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { prepareMessage } from "../../src/core/message/prepare.js";
import type { Sender } from "../../src/engine/deliverer.js";
import { runDeliveries } from "../../src/engine/run-deliveries.js";
import type { DeliveryJob, FinishedLog, JobOutcome } from "../../src/engine/delivery-job.js";
import { createHarness, deliver, targetOf } from "../integration/support.js";

const stamps = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: randomUUID };

function jobOf(number: number, userId: string, signal?: AbortSignal): DeliveryJob {
  const event = { type: "track", userId, event: `Event ${number}`, messageId: `m-${number}` };
  return { number, original: JSON.stringify(event), prepared: prepareMessage(event, stamps), signal };
}

describe("runDeliveries with a job's own signal (wh serve's Redis partition lease)", () => {
  const harness = createHarness();
  afterEach(() => harness.close());

  it("cuts the job's delivery when its signal aborts, does not start the user's next job, and reports both unfinished, not finished", async () => {
    // The first event of u1 hangs at the receiver; every other request is answered 200.
    const server = await harness.server({ replies: (request) => (request.body.toString().includes("Event 1") ? "hang" : 200) });
    const transport = harness.transport();
    const sender: Sender = {
      send: async (body, signal) => (await deliver(body, { targets: [targetOf(server.url)], transport, signal, timeoutMs: 30_000 })).report,
      retrying: 0,
      waiting: () => [],
      retryNow: () => 0,
    };
    const lease = new AbortController();
    const finished: number[] = [];
    const unfinished: number[] = [];
    const journal: FinishedLog = {
      markFinished: ({ number }) => finished.push(number),
      markUnfinished: (number) => unfinished.push(number),
      flush: () => undefined,
      broken: undefined,
    };
    const outcomes = new Map<number, JobOutcome>();
    const run = runDeliveries(
      (async function* () {
        yield [jobOf(1, "u1", lease.signal), jobOf(2, "u1", lease.signal), jobOf(3, "u2")];
      })(),
      {
        sender,
        concurrency: 4,
        ordered: true,
        ratePerSecond: undefined,
        journal,
        deadLetter: undefined,
        signal: new AbortController().signal,
        onOutcome: (job, outcome) => outcomes.set(job.number, outcome),
      },
    );
    await expect.poll(() => server.requests.length).toBe(2);
    lease.abort();
    const summary = await run;
    expect(Object.fromEntries(outcomes)).toEqual({ 1: "interrupted", 2: "interrupted", 3: "delivered" });
    // Job 2 was never sent: its user's earlier event was cut.
    expect(server.requests.map((request) => JSON.parse(request.body.toString()).event).sort()).toEqual(["Event 1", "Event 3"]);
    expect(finished).toEqual([3]);
    expect(unfinished.sort()).toEqual([1, 2]);
    expect(summary).toMatchObject({ delivered: 1, unfinished: 2 });
  });
});
