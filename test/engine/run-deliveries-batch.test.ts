import { afterEach, describe, expect, it } from "vitest";
import type { Destination } from "../../src/config/resolve.js";
import { prepareMessage } from "../../src/core/message/prepare.js";
import { signBody, verifyBody } from "../../src/core/sign.js";
import { createDeliverer, type Deliverer } from "../../src/engine/deliverer.js";
import type { DeliveryJob, JobOutcome } from "../../src/engine/delivery-job.js";
import { runDeliveries, type RunSummary } from "../../src/engine/run-deliveries.js";
import type { RecordingServerOptions } from "../helpers/recording-server.js";
import { createHarness, targetOf } from "../integration/support.js";

const SECRET = "batch-s3cret";
const stamps = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: () => "unused" };

function jobOf(number: number, userId: string): DeliveryJob {
  const event = { type: "track", userId, event: `Event ${number}`, messageId: `m-${number}` };
  return { number, original: JSON.stringify(event), prepared: prepareMessage(event, stamps) };
}

function bodyOf(job: DeliveryJob): string {
  if (!job.prepared.ok) throw new Error(`job ${job.number} is invalid: ${job.prepared.error}`);
  return job.prepared.message.body;
}

describe("runDeliveries with a batch size (Actions batches)", () => {
  const harness = createHarness();
  const deliverers: Deliverer[] = [];
  afterEach(async () => {
    await Promise.all(deliverers.splice(0).map((deliverer) => deliverer.close()));
    await harness.close();
  });

  /** Runs the jobs, read together, through the real deliverer to a recording server, in Actions batches of `batchSize`. */
  async function runBatches(jobs: DeliveryJob[], batchSize: number, server: RecordingServerOptions, outcomes = new Map<number, JobOutcome>()) {
    const receiver = await harness.server(server);
    const destination: Destination = {
      source: undefined,
      writeKey: undefined,
      enabled: true,
      targets: [targetOf(receiver.url)],
      sharedSecret: SECRET,
      secretOrigin: undefined,
      scheme: "segment",
      mode: "actions",
      method: "POST",
      batchSize,
      timeoutMs: 5_000,
    };
    const deliverer = await createDeliverer({
      configPath: undefined,
      destinations: [destination],
      caFiles: [],
      cwd: process.cwd(),
      timeoutMs: 5_000,
      retryWindowMs: 5_000,
      maxAttempts: 1,
    });
    deliverers.push(deliverer);
    const summary: RunSummary = await runDeliveries(
      (async function* () {
        yield jobs;
      })(),
      {
        sender: deliverer.to(destination),
        concurrency: 4,
        ordered: true,
        batchSize,
        ratePerSecond: undefined,
        journal: undefined,
        deadLetter: undefined,
        signal: new AbortController().signal,
        onOutcome: (job, outcome) => outcomes.set(job.number, outcome),
      },
    );
    return { receiver, summary };
  }

  it("sends the events as one JSON array whose X-Signature covers its first event only, as Segment signs batches", async () => {
    const jobs = [jobOf(1, "u1"), jobOf(2, "u2"), jobOf(3, "u3")];
    const { receiver, summary } = await runBatches(jobs, 3, {});
    expect(summary).toMatchObject({ delivered: 3 });
    expect(receiver.requests).toHaveLength(1);
    const body = receiver.requests[0]?.body.toString("utf8") ?? "";
    expect(body).toBe(`[${jobs.map(bodyOf).join(",")}]`);
    const signature = String(receiver.requests[0]?.headers["x-signature"]);
    expect(signature).toBe(signBody(SECRET, bodyOf(jobs[0] as DeliveryJob)));
    expect(verifyBody(SECRET, body, signature)).toEqual({ ok: true, kind: "batch" });
  });

  it("starts a batch only once the earlier batch holding any of its users has ended, not only its first user's", async () => {
    // Batch 1 is u1 and u2, answered slowly; batch 2 is u3 and u2: it shares u2 (not its first user) with batch 1.
    const jobs = [jobOf(1, "u1"), jobOf(2, "u2"), jobOf(3, "u3"), jobOf(4, "u2")];
    const outcomes = new Map<number, JobOutcome>();
    const endedWhenBatch2Arrived: number[] = [];
    const { receiver } = await runBatches(
      jobs,
      2,
      {
        replies: (request) => {
          if (request.body.toString("utf8").includes("Event 1")) return { status: 200, delayMs: 300 };
          endedWhenBatch2Arrived.push(...outcomes.keys());
          return 200;
        },
      },
      outcomes,
    );
    expect(receiver.requests).toHaveLength(2);
    expect(endedWhenBatch2Arrived).toEqual([1, 2]);
    expect(Object.fromEntries(outcomes)).toEqual({ 1: "delivered", 2: "delivered", 3: "delivered", 4: "delivered" });
  });
});
