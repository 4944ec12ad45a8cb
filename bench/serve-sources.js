// wh serve's CPU per accepted event against the number of sources in its config (1, 10, 100),
// the events spread over every source (each request a write key drawn in turn) or all to the
// first, with the webhook down and with it up. Down (503, Retry-After: 1, its own process): each
// forwarder reads its source's events until its runner holds all it may, then retries what it
// holds every second, so the webhook's requests grow with the sources (every source has its own
// deliveries in flight), not with the events; the table says how many per accepted event. Up (200
// at once): every accepted event is delivered meanwhile, and its CPU is in the figure. Each
// configuration starts fresh on an empty directory; configurations take turns round by round,
// batches of 100 events, 16 connections, SECONDS after WARM_UP seconds (default 1). CPU = user +
// system of wh serve's process per event answered 200, from /proc; its peak RSS (VmHWM) beside it. With the webhook down, the
// first seconds hold each source's first retries (--concurrency 32 per source, Retry-After: 1, the
// backoff growing from 1 s): BENCH_WARMUP_SECONDS=10 measures past them. BENCH_SOURCE_COUNTS=1,100
// leaves out 10. BENCH_REQUESTS_PER_SECOND=300 posts at that rate instead of as fast as serve
// answers: a configuration that costs more then does not also answer later, which keeps each
// request's objects alive longer and makes the collector promote them (docs/measured.md).
// BENCH_SERVE_BASELINE=<dir> (another checkout's build: git worktree add /tmp/base <rev> && cd /tmp/base
// && ln -s <this checkout>/node_modules && npm run build) runs each configuration on it too, in
// the same rounds, and prints this build's CPU per event over its.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { trackingBatch } from "./generate.js";
import { cpuUs, peakRssMb } from "./proc-stat.js";
import { startReceiverProcess } from "./receiver-process.js";
import { startServeProcess } from "./wh-process.js";

const BATCH = 100;
const CONNECTIONS = 16;
const SECONDS = Number(process.env.BENCH_SERVE_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARM_UP = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const COUNTS = (process.env.BENCH_SOURCE_COUNTS ?? "1,10,100").split(",").map(Number);
const BASELINE = process.env.BENCH_SERVE_BASELINE;
const BUILDS = BASELINE === undefined ? [undefined] : [undefined, BASELINE];
const RATE = process.env.BENCH_REQUESTS_PER_SECOND === undefined ? {} : { overallRate: Number(process.env.BENCH_REQUESTS_PER_SECOND) };
const parts = JSON.stringify(trackingBatch(BATCH, "@id@")).split("@id@");
const basic = (key) => `Basic ${Buffer.from(`${key}:`).toString("base64")}`;

/** Requests of unique events, each with the write key of the next source in turn (`spread`) or the first's. */
function requestsFor(sources, spread) {
  let sent = 0;
  const setupRequest = (request) => {
    sent += 1;
    request.body = parts.join(`s${sent.toString(36)}`);
    request.headers = { "content-type": "application/json", authorization: basic(`bench-${spread ? sent % sources : 0}`) };
    return request;
  };
  return [{ method: "POST", setupRequest }];
}

async function measure(dir, webhook, sources, spread, build) {
  const config = join(dir, "whrc.json");
  const entries = Array.from({ length: sources }, (_, index) => [`s${index}`, { writeKey: `bench-${index}`, webhooks: [{ url: webhook.url }] }]);
  writeFileSync(config, JSON.stringify({ sources: Object.fromEntries(entries) }));
  const serve = await startServeProcess(["--config", config, "--data-dir", join(dir, "data")], build);
  try {
    const post = (seconds) =>
      autocannon({
        url: `${serve.url}/v1/batch`,
        method: "POST",
        connections: CONNECTIONS,
        duration: seconds,
        requests: requestsFor(sources, spread),
        ...RATE,
      });
    await post(WARM_UP);
    await webhook.perSecond();
    const before = cpuUs(serve.pid);
    const result = await post(SECONDS);
    const cpu = cpuUs(serve.pid) - before;
    const webhookRequests = (await webhook.perSecond()).reduce((sum, count) => sum + count, 0);
    const accepted = result["2xx"] * BATCH;
    return {
      cpuPerEventUs: cpu / accepted,
      perSecond: accepted / SECONDS,
      webhookPerEvent: webhookRequests / accepted,
      trouble: result.non2xx + result.errors + result.timeouts,
      peakRssMb: peakRssMb(serve.pid),
    };
  } finally {
    await serve.kill();
  }
}

/** With BENCH_SERVE_BASELINE: the baseline build's CPU per event in the configuration, and this build's over it, round by round. */
function againstBaseline(key, cpu) {
  const runsOfBaseline = runs.get(`${key} baseline`);
  if (runsOfBaseline === undefined) return "";
  const baseline = runsOfBaseline.map((run) => run.cpuPerEventUs);
  const ratios = cpu.map((value, round) => value / baseline[round]);
  return `  baseline ${median(baseline).toFixed(1)} µs, peak RSS ${Math.round(median(runsOfBaseline.map((run) => run.peakRssMb)))} MB; this / baseline ${median(ratios).toFixed(2)} [${ratios.map((ratio) => ratio.toFixed(2)).join(" ")}]`;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const webhooks = { down: await startReceiverProcess({ status: 503 }), up: await startReceiverProcess() };
const runs = new Map();
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const state of ["down", "up"]) {
      for (const spread of [true, false]) {
        for (const sources of COUNTS) {
          for (const build of BUILDS) {
            const dir = mkdtempSync(join(tmpdir(), "wh-bench-sources-"));
            try {
              const key = `${state} ${sources} ${spread}${build === undefined ? "" : " baseline"}`;
              runs.set(key, [...(runs.get(key) ?? []), await measure(dir, webhooks[state], sources, spread, build)]);
            } finally {
              rmSync(dir, { recursive: true, force: true });
            }
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
      }
    }
  }
} finally {
  await Promise.all(Object.values(webhooks).map((webhook) => webhook.stop()));
}

console.log(
  `serve sources (node bench/serve-sources.js; BENCH_SERVE_SECONDS=${SECONDS} BENCH_ROUNDS=${ROUNDS} BENCH_WARMUP_SECONDS=${WARM_UP}): batches of ${BATCH}, ${CONNECTIONS} connections${RATE.overallRate === undefined ? "" : ` at ${RATE.overallRate} requests/s`}, ${SECONDS} s per run after ${WARM_UP} s of warm-up, medians of ${ROUNDS} rounds taking turns; floor: one source`,
);
for (const state of ["down", "up"]) {
  for (const spread of [true, false]) {
    const one = runs.get(`${state} 1 ${spread}`).map((run) => run.cpuPerEventUs);
    for (const sources of COUNTS) {
      const list = runs.get(`${state} ${sources} ${spread}`);
      const cpu = list.map((run) => run.cpuPerEventUs);
      const ratios = cpu.map((value, round) => value / one[round]);
      const trouble = list.reduce((sum, run) => sum + run.trouble, 0);
      const webhook = median(list.map((run) => run.webhookPerEvent));
      console.log(
        `  webhook ${state.padEnd(4)} ${String(sources).padStart(3)} source${sources === 1 ? " " : "s"}, ${spread ? "events spread" : "all to one   "}  ${median(cpu).toFixed(1).padStart(6)} µs CPU per event [${Math.min(...cpu).toFixed(1)}–${Math.max(...cpu).toFixed(1)}]  ${String(Math.round(median(list.map((run) => run.perSecond)))).padStart(6)} events/s  peak RSS ${Math.round(median(list.map((run) => run.peakRssMb)))} MB  ${webhook.toFixed(3)} webhook requests per event  / one source ${median(ratios).toFixed(2)} [${ratios.map((ratio) => ratio.toFixed(2)).join(" ")}]${sources === 1 ? "" : " (target <= 1.2)"}${trouble > 0 ? `  (${trouble} requests refused or failed)` : ""}${againstBaseline(`${state} ${sources} ${spread}`, cpu)}`,
      );
    }
  }
}
