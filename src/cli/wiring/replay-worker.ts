import { randomUUID } from "node:crypto";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { systemClock } from "../../adapters/system-clock.js";
import { resolveDeliverySettings } from "../../config/resolve.js";
import { clockStamps } from "../../core/clock.js";
import { createDeliverer } from "../../engine/deliverer.js";
import { linesToJobs } from "../../engine/line-jobs.js";
import { WorkerSide } from "../../engine/replay-worker-side.js";
import type { ParentPort } from "../../engine/worker-protocol.js";
import { runDeliveries } from "../../engine/run-deliveries.js";
import { attachRunFiles } from "../../engine/run-files.js";
import { linePreparer } from "../commands/replay.js";
import type { ReplayWorkerData } from "./replay-on-workers.js";

/** A worker thread's run: prepares and delivers the lines the parent hands it, reporting each end to the parent. */
export async function runReplayWorker(): Promise<void> {
  if (isMainThread || parentPort === null) throw new Error("a replay worker runs in a worker thread of wh replay");
  const data = workerData as ReplayWorkerData;
  const { flags } = data;
  const files = data.files === undefined ? undefined : attachRunFiles(data.files);
  const side = new WorkerSide(parentPort as unknown as ParentPort, files, data.everyOutcome, data.hangingAfterMs);
  const settings = await resolveDeliverySettings(flags, data.env, data.cwd, "one", true);
  const destination = settings.destinations[0];
  if (destination === undefined) throw new Error("a replay worker found no destination");
  const deliverer = await createDeliverer(settings, { env: data.env });
  side.onRetryNow(() => deliverer.retryNow());
  try {
    const stamps = clockStamps(systemClock, randomUUID);
    const summary = await runDeliveries(linesToJobs(side.lines(), linePreparer(destination, stamps, flags.exactBytes === true)), {
      concurrency: data.concurrency,
      ordered: flags.ordered === "user",
      ratePerSecond: undefined,
      maxFailures: flags.maxFailures,
      batchSize: destination.batchSize,
      sender: deliverer.to(destination),
      earlier: data.earlier,
      graceMs: data.graceMs,
      ...side.runOptions(),
    });
    side.done(summary);
  } finally {
    await deliverer.close();
  }
}
