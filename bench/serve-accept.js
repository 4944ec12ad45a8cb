// wh serve accepting, side by side with its floor, bench/bare-spool-server.js (parse the batch, one
// line per event, the same group fdatasync), taking turns round by round under the same
// autocannon load: batches of 100 events as an SDK sends them (bench/generate.js), 16 connections,
// SECONDS after one second of warm-up, each server started fresh on an empty directory. Per run:
// events/s accepted (answered 200) and µs of CPU per accepted event of the server's process, read
// from /proc (every thread: the fdatasyncs and V8's collector too). wh serve runs twice a round:
// with its webhook down (a receiver in its own process answering 503 with Retry-After: 1), so the
// forwarder only waits and the CPU is the accepting's; and with a webhook that keeps up (a
// receiver answering 200 at once), where the CPU includes the deliveries made meanwhile and the
// receiver counts them: delivered / accepted in the same window. With BENCH_SERVE_BASELINE=<dir>, a
// checkout of another commit with its own build (npm run build there, node_modules linked), that
// wh serve runs too each round, webhook down, for CPU per event side by side. Then where
// accepting's CPU goes, in-process (bench/accept-split.js).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { acceptSplit } from "./accept-split.js";
import { trackingBatch, uniqueBatchRequests } from "./generate.js";
import { cpuUs } from "./proc-stat.js";
import { startReceiverProcess } from "./receiver-process.js";
import { startServeProcess } from "./wh-process.js";

const BATCH = 100;
const CONNECTIONS = 16;
const SECONDS = Number(process.env.BENCH_SERVE_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BASELINE = process.env.BENCH_SERVE_BASELINE;
const requests = uniqueBatchRequests(BATCH);
const eventBytes = Math.round(JSON.stringify(trackingBatch(BATCH, "r1")).length / BATCH);
const headers = { "content-type": "application/json", authorization: `Basic ${Buffer.from("bench:").toString("base64")}` };

/** bench/bare-spool-server.js in its own process, appending to `file`. */
async function startBareServer(file) {
  const child = spawn(process.execPath, [fileURLToPath(new URL("./bare-spool-server.js", import.meta.url)), file], { stdio: ["ignore", "pipe", "inherit"] });
  const { port } = JSON.parse((await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next()).value);
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await once(child, "close");
    },
  };
}

const post = (url, seconds) => autocannon({ url: `${url}/v1/batch`, method: "POST", connections: CONNECTIONS, duration: seconds, requests, headers });

/**
 * One run against a started server: a second of warm-up, then SECONDS measured. With `receiver`,
 * also the deliveries it answered during those SECONDS, as a share of the events accepted.
 */
async function measure(server, receiver) {
  await post(server.url, 1);
  await receiver?.perSecond();
  const cpuBefore = cpuUs(server.pid);
  const result = await post(server.url, SECONDS);
  const cpu = cpuUs(server.pid) - cpuBefore;
  const delivered = receiver === undefined ? undefined : (await receiver.perSecond()).reduce((sum, count) => sum + count, 0);
  const accepted = result["2xx"] * BATCH;
  const seconds = (new Date(result.finish) - new Date(result.start)) / 1000;
  return {
    perSecond: accepted / seconds,
    cpuPerEventUs: cpu / accepted,
    cores: cpu / (seconds * 1e6),
    deliveredShare: delivered === undefined ? undefined : delivered / accepted,
    refused: result.non2xx,
    errors: result.errors + result.timeouts,
    latencyMs: result.latency.p50,
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000));

const dir = mkdtempSync(join(tmpdir(), "wh-bench-accept-"));
const webhookDown = await startReceiverProcess({ status: 503 });
const webhookUp = await startReceiverProcess();
// Answering after 400 ms: 32 deliveries at a time make 80 a second, whatever the CPU.
const webhookSlow = await startReceiverProcess({ delayMs: 400 });
const runs = { bare: [], down: [], up: [], slow: [], baseline: [], baselineUp: [] };
/** Each round's runs: its name in `runs`, and how it starts its server (wh serve: its webhook, and the checkout it runs from). */
const roundRuns = [
  ["bare", (round) => startBareServer(join(dir, `bare-${round}.ndjson`))],
  ...[
    ["down", webhookDown, undefined],
    ["up", webhookUp, undefined],
    ["slow", webhookSlow, undefined],
    ...(BASELINE === undefined
      ? []
      : [
          ["baseline", webhookDown, BASELINE],
          ["baselineUp", webhookUp, BASELINE],
        ]),
  ].map(([name, receiver, checkout]) => [
    name,
    (round) => startServeProcess(["--url", receiver.url, "--data-dir", join(dir, `${name}-${round}`)], checkout),
    receiver,
  ]),
];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    // Each round starts one run later, so that no run always follows the same one.
    for (let turn = 0; turn < roundRuns.length; turn += 1) {
      const [name, start, receiver] = roundRuns[(round + turn) % roundRuns.length];
      const server = await start(round);
      runs[name].push(await measure(server, receiver === webhookUp ? receiver : undefined));
      await (server.kill?.() ?? server.stop());
      await settle();
    }
  }
} finally {
  await Promise.all([webhookDown.stop(), webhookUp.stop(), webhookSlow.stop()]);
  rmSync(dir, { recursive: true, force: true });
}

const rounds = (values) => `rounds ${values.join(" ")}`;
const figures = (name) => {
  const rate = median(runs[name].map((run) => run.perSecond));
  const cpu = median(runs[name].map((run) => run.cpuPerEventUs));
  const cores = median(runs[name].map((run) => run.cores));
  const trouble = runs[name].reduce((sum, run) => sum + run.refused + run.errors, 0);
  return `${String(Math.round(rate)).padStart(7)} events/s  ${cpu.toFixed(1).padStart(5)} µs CPU per event  ${cores.toFixed(2)} cores busy${trouble > 0 ? `  (${trouble} requests refused or failed)` : ""}`;
};
const ratios = (name, figure) => runs[name].map((run, round) => run[figure] / runs.bare[round][figure]);
const describeRatios = (values) => `${median(values).toFixed(2)} (${rounds(values.map((value) => value.toFixed(2)))})`;
const shares = runs.up.map((run) => run.deliveredShare);
const percent = (share) => `${Math.round(share * 100)}%`;

console.log(
  `serve accept (node bench/serve-accept.js; BENCH_SERVE_SECONDS=${SECONDS} BENCH_ROUNDS=${ROUNDS}): batches of ${BATCH} events of ${eventBytes} bytes, ${CONNECTIONS} connections, ${SECONDS} s per run after 1 s of warm-up, medians of ${ROUNDS} rounds taking turns; CPU = user + system of the server's process per event answered 200`,
);
console.log(`  bare spool server         ${figures("bare")}  (parse, one line per event, group fdatasync)`);
console.log(`  wh serve, webhook down    ${figures("down")}  (the forwarder waiting: accepting alone; target <= 10 µs)`);
console.log(`  wh serve, webhook up      ${figures("up")}  (deliveries made meanwhile included)`);
console.log(
  `  wh serve, webhook slow    ${figures("slow")}  (answering after 400 ms), median answer ${median(runs.slow.map((run) => run.latencyMs))} ms: requests wait for the forwarder only while the CPU is busy (each waited 1 s before b89cdd8)`,
);
console.log(
  `  wh serve / bare, webhook down: events/s ${describeRatios(ratios("down", "perSecond"))} (target >= 0.25); CPU per event ${describeRatios(ratios("down", "cpuPerEventUs"))}`,
);
console.log(
  `  wh serve / bare, webhook up:   events/s ${describeRatios(ratios("up", "perSecond"))}; CPU per event ${describeRatios(ratios("up", "cpuPerEventUs"))}`,
);
if (BASELINE !== undefined) {
  const against = (name, baseline) => describeRatios(runs[name].map((run, round) => run.cpuPerEventUs / runs[baseline][round].cpuPerEventUs));
  console.log(`  baseline, webhook down    ${figures("baseline")}  (BENCH_SERVE_BASELINE=${BASELINE})`);
  console.log(`  baseline, webhook up      ${figures("baselineUp")}`);
  console.log(
    `  baseline / bare, webhook down: CPU per event ${describeRatios(ratios("baseline", "cpuPerEventUs"))}; wh serve / baseline, CPU per event: webhook down ${against("down", "baseline")}, webhook up ${against("up", "baselineUp")}`,
  );
}
console.log(
  `  delivered while accepting, webhook up: ${percent(median(shares))} of the events accepted in the same window (${rounds(shares.map(percent))}) (target >= 50%)`,
);
await acceptSplit();
