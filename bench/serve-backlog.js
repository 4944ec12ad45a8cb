// wh serve's memory with a backlog: its webhook down (a receiver in its own process answering 503
// with Retry-After: 1) and --retry-window 1h, autocannon posts batches of 100 events as an SDK
// sends them (bench/generate.js), 4 connections, until WAITING events are accepted; then
//   1. the peak RSS of the process that accepted them (VmHWM, /proc/<pid>/status);
//   2. stopped (SIGTERM) and started again on the same data directory, the webhook still down: the
//      peak RSS of the new process, from its start to 3 s after it listens (recovering the spool);
//   3. the webhook comes back (the receiver answers 200 at once): the time until the spool is
//      empty (wh_serve_spool_depth 0) and the peak RSS while it drains, counted afresh from what
//      was resident when it began.
// WAITING is BENCH_SERVE_WAITING (default 300,000: about a third of a GB spooled).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trackingBatch } from "./generate.js";
import { peakRssMb, resetPeakRss, rssMb } from "./proc-stat.js";
import { startReceiverProcess } from "./receiver-process.js";
import { BATCH, CONNECTIONS, drain, fill, STALL_MS } from "./serve-load.js";
import { serveMetric, startServeProcess } from "./wh-process.js";

const WAITING = Number(process.env.BENCH_SERVE_WAITING ?? 300_000);
const RECOVERY_MS = 3_000;
const eventBytes = Math.round(JSON.stringify(trackingBatch(BATCH, "r1")).length / BATCH);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const secondsSince = (startedMs) => (performance.now() - startedMs) / 1000;

const dir = mkdtempSync(join(tmpdir(), "wh-bench-backlog-"));
const webhook = await startReceiverProcess({ status: 503 });
const args = ["--url", webhook.url, "--data-dir", dir, "--retry-window", "1h"];
let serve;
try {
  serve = await startServeProcess(args);
  const fillStarted = performance.now();
  const accepted = await fill(serve, WAITING);
  const fillSeconds = secondsSince(fillStarted);
  const fillPeak = peakRssMb(serve.pid);
  const spoolMb = (await serveMetric(serve.url, "wh_serve_spool_bytes")) / 1e6;
  await serve.stop();

  const restarted = performance.now();
  serve = await startServeProcess(args);
  const listenSeconds = secondsSince(restarted);
  await sleep(RECOVERY_MS);
  const waiting = await serveMetric(serve.url, "wh_serve_spool_depth");
  const restartPeak = peakRssMb(serve.pid);

  const drainFromMb = rssMb(serve.pid);
  resetPeakRss(serve.pid);
  webhook.answerOk();
  const drainStarted = performance.now();
  const left = await drain(serve);
  const drainSeconds = secondsSince(drainStarted);
  const drainPeak = peakRssMb(serve.pid);
  const delivered = await serveMetric(serve.url, 'wh_serve_events_total{outcome="delivered"}');

  const mb = (value) => `${value.toFixed(1)} MB`;
  console.log(
    `serve backlog (node bench/serve-backlog.js; BENCH_SERVE_WAITING=${WAITING}): webhook down (503, Retry-After: 1), --retry-window 1h, batches of ${BATCH} events of ${eventBytes} bytes, ${CONNECTIONS} connections; peak RSS = VmHWM of wh serve's process (target < 250 MB in each phase)`,
  );
  console.log(
    `  filling:    ${accepted} events accepted in ${fillSeconds.toFixed(1)} s (${Math.round(accepted / fillSeconds)} events/s), spool ${spoolMb.toFixed(0)} MB on disk; peak RSS ${mb(fillPeak)}`,
  );
  console.log(
    `  restarting: on that spool, webhook still down: listening after ${listenSeconds.toFixed(1)} s, ${waiting} events waiting; peak RSS to ${RECOVERY_MS / 1000} s after listening ${mb(restartPeak)}`,
  );
  console.log(
    `  draining:   webhook back (200 at once): ${left === 0 ? `spool empty after ${drainSeconds.toFixed(1)} s (${Math.round(waiting / drainSeconds)} events/s)` : `${left} events still waiting after ${drainSeconds.toFixed(1)} s, none delivered in the last ${STALL_MS / 1000} s`}, ${delivered} delivered; peak RSS while draining ${mb(drainPeak)} (resident when it began: ${mb(drainFromMb)})`,
  );
} finally {
  await serve?.kill();
  await webhook.stop();
  rmSync(dir, { recursive: true, force: true });
}
