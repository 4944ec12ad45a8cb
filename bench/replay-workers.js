// wh replay --workers 1 beside --workers 2 on one fast receiver (bench/receiver.js in its own
// process, or BENCH_RECEIVER_URL), with autocannon's workers 1 and 2 on the same receiver beside them: events/s of each,
// taking turns round by round, and each tool's 2:1 ratio per round (median and range). wh's rate
// is over its wall time, start-up and its threads' included. The load average is printed before
// and after: on a shared machine the figures are only as good as the cores that were idle.
import { createHmac } from "node:crypto";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { generateEvents, sampleBody } from "./generate.js";
import { startReceiverProcess } from "./receiver-process.js";
import { runWh } from "./wh-process.js";

const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
// Enough events that the threads' start-up (about 0.2 s of CPU each) is a small part; few rounds, to stay near a minute.
const EVENTS = Number(process.env.BENCH_EVENTS ?? 80_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 64;
const SECRET = "bench-secret";

async function replay(file, url, workers) {
  const leftovers = [`${file}.wh-journal`, `${file}.failed.ndjson`];
  for (const leftover of leftovers) rmSync(leftover, { force: true });
  const run = await runWh(["replay", file, "--url", url, "--concurrency", String(CONCURRENCY), "--workers", String(workers), "--quiet"]);
  if (run.code !== 0 || run.summary?.delivered !== EVENTS) throw new Error(`wh replay --workers ${workers} exited ${run.code}`);
  for (const leftover of leftovers) rmSync(leftover, { force: true });
  cpuPerEvent[`wh${workers}`].push(run.cpuUs / EVENTS);
  return (EVENTS * 1000) / run.wallMs;
}

/** wh's CPU per event (user + system, every thread, start-up included) by the number of workers, round by round. */
const cpuPerEvent = { wh1: [], wh2: [] };

async function cannon(url, body, workers) {
  const headers = { "content-type": "application/json", "x-signature": createHmac("sha1", SECRET).update(body).digest("hex") };
  const result = await autocannon({ url, method: "POST", connections: CONCURRENCY, amount: EVENTS, body, headers, ...(workers > 1 ? { workers } : {}) });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`autocannon: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.total / ((new Date(result.finish) - new Date(result.start)) / 1000);
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(", ");
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

mkdirSync(dataDir, { recursive: true });
const file = `${dataDir}events-${EVENTS}.ndjson`;
if (!existsSync(file)) await generateEvents(file, EVENTS);
console.log(`${EVENTS} events, --concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${availableParallelism()} cores; load average before: ${load()}`);

// BENCH_RECEIVER_URL: a receiver already running (nginx answering 200, say), cheaper than Node's: on
// 2 cores the receiver takes CPU the workers would use, and the faster it is the less it hides.
const external = process.env.BENCH_RECEIVER_URL;
const receiver = external === undefined ? await startReceiverProcess() : { url: external, stop: async () => undefined };
console.log(`receiver: ${external === undefined ? "bench/receiver.js in its own process" : external}`);
const rounds = [];
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const figures = {};
    // Turns rotate with the round: no tool always runs first, right after the pause.
    const turns = [
      ["wh1", () => replay(file, receiver.url, 1)],
      ["wh2", () => replay(file, receiver.url, 2)],
      ["ac1", () => cannon(receiver.url, sampleBody(), 1)],
      ["ac2", () => cannon(receiver.url, sampleBody(), 2)],
    ];
    for (let turn = 0; turn < turns.length; turn += 1) {
      const [name, run] = turns[(turn + round) % turns.length];
      await settle();
      figures[name] = await run();
    }
    rounds.push(figures);
    const f = (value) => Math.round(value).toLocaleString("en");
    console.log(
      `round ${round + 1}: wh --workers 1 ${f(figures.wh1)}/s, --workers 2 ${f(figures.wh2)}/s (${(figures.wh2 / figures.wh1).toFixed(2)}×); ` +
        `autocannon 1 worker ${f(figures.ac1)}/s, 2 workers ${f(figures.ac2)}/s (${(figures.ac2 / figures.ac1).toFixed(2)}×)`,
    );
  }
} finally {
  await receiver.stop();
}
const whRatios = rounds.map((each) => each.wh2 / each.wh1);
const acRatios = rounds.map((each) => each.ac2 / each.ac1);
const of = (name) => Math.round(median(rounds.map((each) => each[name]))).toLocaleString("en");
console.log(
  `medians: wh --workers 1 ${of("wh1")}/s, --workers 2 ${of("wh2")}/s, ratio ${median(whRatios).toFixed(2)}× [${range(whRatios)}]; ` +
    `autocannon 1 worker ${of("ac1")}/s, 2 workers ${of("ac2")}/s, ratio ${median(acRatios).toFixed(2)}× [${range(acRatios)}]; ` +
    `wh --workers 2 / autocannon 2 workers ${(median(rounds.map((each) => each.wh2 / each.ac2)) * 100).toFixed(0)}%`,
);
// Where the cores are shared with the receiver, the rates say little; the CPU per event says what
// two workers could give on idle cores: at most 2 / (their CPU per event over one worker's).
const cpuRatios = cpuPerEvent.wh2.map((cpu, round) => cpu / cpuPerEvent.wh1[round]);
console.log(
  `CPU per event: wh --workers 1 ${median(cpuPerEvent.wh1).toFixed(1)} µs, --workers 2 ${median(cpuPerEvent.wh2).toFixed(1)} µs, ratio ${median(cpuRatios).toFixed(2)}× [${range(cpuRatios)}]; ` +
    `two workers on two idle cores: at most ${(2 / median(cpuRatios)).toFixed(2)}× one's rate`,
);
console.log(`load average after: ${load()}`);
