import { afterEach, describe, expect, it } from "vitest";
import type { Destination } from "../../src/config/resolve.js";
import { prepareMessage } from "../../src/core/message/prepare.js";
import { signBody, verifyBody } from "../../src/core/sign.js";
import { createDeliverer, type Deliverer } from "../../src/engine/deliverer.js";
import { runDeliveries, type DeliveryJob } from "../../src/engine/run-deliveries.js";
import { createHarness, targetOf } from "./support.js";

const SECRET = "batch-s3cret";
const stamps = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: () => "unused" };

function jobOf(number: number): DeliveryJob {
  const event = { type: "track", userId: `u${number}`, event: `Event ${number}`, messageId: `m-${number}` };
  return { number, original: JSON.stringify(event), prepared: prepareMessage(event, stamps) };
}

describe("runDeliveries with a batch size (an Actions batch)", () => {
  const harness = createHarness();
  const deliverers: Deliverer[] = [];
  afterEach(async () => {
    await Promise.all(deliverers.splice(0).map((deliverer) => deliverer.close()));
    await harness.close();
  });

  it("sends the events as one JSON array whose X-Signature covers its first event only, as Segment signs batches", async () => {
    const server = await harness.server();
    const destination: Destination = {
      source: undefined,
      writeKey: undefined,
      enabled: true,
      targets: [targetOf(server.url)],
      sharedSecret: SECRET,
      secretOrigin: undefined,
      mode: "actions",
      method: "POST",
      batchSize: 3,
      timeoutMs: 2_000,
    };
    const deliverer = await createDeliverer({ configPath: undefined, destinations: [destination], caFiles: [], timeoutMs: 2_000, retryWindowMs: 2_000, maxAttempts: 1 });
    deliverers.push(deliverer);
    const jobs = [jobOf(1), jobOf(2), jobOf(3)];
    const summary = await runDeliveries(
      (async function* () {
        yield jobs;
      })(),
      { sender: deliverer.to(destination), concurrency: 1, ordered: true, batchSize: 3, ratePerSecond: undefined, journal: undefined, deadLetter: undefined, signal: new AbortController().signal },
    );
    expect(summary).toMatchObject({ delivered: 3 });
    expect(server.requests).toHaveLength(1);
    const bodies = jobs.map((job) => (job.prepared.ok ? job.prepared.message.body : ""));
    const [request] = server.requests;
    const body = request?.body.toString("utf8");
    expect(body).toBe(`[${bodies.join(",")}]`);
    const signature = String(request?.headers["x-signature"]);
    expect(signature).toBe(signBody(SECRET, bodies[0] as string));
    expect(verifyBody(SECRET, body as string, signature)).toEqual({ ok: true, kind: "batch" });
  });
});
