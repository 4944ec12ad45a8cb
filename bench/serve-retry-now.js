// How long wh serve's backlog takes to drain once its webhook is back, left to the retry schedule
// and with "retry now" (issue 27 item 3). Each round: a fresh data directory, the webhook down (a
// receiver in its own process answering 503 with Retry-After: 1), --retry-window 1h; EVENTS events
// accepted (batches of 100, bench/generate.js), the webhook kept down until DOWN_MS after serve
// started (the waiting deliveries' backoffs grow meanwhile); then it answers 200 and the time until
// the spool is empty (wh_serve_spool_depth 0, polled every 50 ms) is measured: once with nothing
// more done (which may take as long as the longest backoff), once with POST /retry sent the
// moment it heals.
// EVENTS is BENCH_RETRY_EVENTS (default 20,000), DOWN_MS BENCH_RETRY_DOWN_S × 1000 (default 60 s).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startReceiverProcess } from "./receiver-process.js";
import { drain, fill } from "./serve-load.js";
import { serveMetric, startServeProcess } from "./wh-process.js";

const EVENTS = Number(process.env.BENCH_RETRY_EVENTS ?? 20_000);
const DOWN_MS = Number(process.env.BENCH_RETRY_DOWN_S ?? 60) * 1_000;

/** Left to the schedule, the spool may not move for as long as the longest backoff (10 min): waited for whole. */
const STALL_MS = 610_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One round: the seconds from the webhook's return to an empty spool, and what waited then. */
async function round(retryNow) {
  const dir = mkdtempSync(join(tmpdir(), "wh-bench-retry-now-"));
  const webhook = await startReceiverProcess({ status: 503 });
  let serve;
  try {
    serve = await startServeProcess(["--url", webhook.url, "--data-dir", dir, "--retry-window", "1h"]);
    const startedMs = performance.now();
    const accepted = await fill(serve, EVENTS);
    await sleep(Math.max(0, DOWN_MS - (performance.now() - startedMs)));
    const waiting = await serveMetric(serve.url, "wh_serve_retrying");
    webhook.answerOk();
    const healedMs = performance.now();
    const retried = retryNow ? (await (await fetch(`${serve.url}/retry`, { method: "POST" })).json()).retried : undefined;
    const left = await drain(serve, 50, STALL_MS);
    const seconds = (performance.now() - healedMs) / 1000;
    const delivered = await serveMetric(serve.url, 'wh_serve_events_total{outcome="delivered"}');
    return { accepted, waiting, retried, left, seconds, delivered };
  } finally {
    await serve?.kill();
    await webhook.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `serve retry now (node bench/serve-retry-now.js; BENCH_RETRY_EVENTS=${EVENTS}, BENCH_RETRY_DOWN_S=${DOWN_MS / 1000}): webhook down (503, Retry-After: 1) for ${DOWN_MS / 1000} s from serve's start, then 200 at once; seconds from then to an empty spool`,
);
for (const retryNow of [false, true]) {
  const { accepted, waiting, retried, left, seconds, delivered } = await round(retryNow);
  const how = retryNow ? `POST /retry at once (retried ${retried})` : "left to the retry schedule";
  const ended =
    left === 0 ? `spool empty after ${seconds.toFixed(1)} s` : `${left} still waiting after ${seconds.toFixed(1)} s (none delivered in ${STALL_MS / 1000} s)`;
  console.log(`  ${how.padEnd(36)} ${accepted} accepted, ${waiting} deliveries waiting to retry when it healed: ${ended}, ${delivered} delivered`);
}
