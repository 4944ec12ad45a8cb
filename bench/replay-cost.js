// Replay's cost beside its floors (issue 36), each figure the median of rounds taking turns on one
// receiver in its own process (bench/receiver.js), with the range of the rounds:
// 1. CPU per event (user + system of the whole process, start-up included) of wh replay, of the
//    f60d674 build when one is given (WH_BASELINE), of autocannon and of the bare undici loop
//    (bench/undici-loop.js), 64 at a time on a receiver that answers at once; and the bare loop
//    through an Agent's dispatch() with a handler of undici's own hooks (wh's transport, and the
//    f60d674 build's), the floor of wh against autocannon;
// 2. the garbage collector's share of wh replay's CPU profile and of the bare loop's (`--cpu-prof`,
//    the "(garbage collector)" samples over those not idle);
// 3. ordered replay with a hot user (half the events one user's) against unordered, on a receiver
//    answering after 2 ms, beside the bare loop one at a time, 64 at a time, and 64 at a time with
//    each user's events in order (bench/undici-loop.js ordered): one user's events go one at a
//    time, and a request sent alone costs more than one of 64, so ordered costs more than
//    unordered for the bare loop too. The floor of ordered / unordered is the bare loop's ratio;
//    how close wh gets is wh's ratio over it;
// 4. --concurrency 512 against a receiver answering after 50 ms, beside autocannon with 512
//    connections on it: events/s from first to last event, wh's as its summary line says.
// The f60d674 build: git worktree add /tmp/f60d674-replay f60d674 && cd /tmp/f60d674-replay &&
// ln -s <this checkout>/node_modules && npm run build; then WH_BASELINE=/tmp/f60d674-replay.
// BENCH_ROUNDS (default 5), BENCH_EVENTS (50,000), BENCH_SKEWED_EVENTS (8,000).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createHmac } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { generateEvents, sampleBody } from "./generate.js";
import { startReceiverProcess } from "./receiver-process.js";
import { runMeasured, runWhIn } from "./wh-process.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const SKEWED_EVENTS = Number(process.env.BENCH_SKEWED_EVENTS ?? 8_000);
const BASELINE = process.env.WH_BASELINE;
const baseline = BASELINE !== undefined && existsSync(join(BASELINE, "bin/wh.cjs")) ? BASELINE : undefined;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const describe = (values, digits = 2) => `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`;
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

/** wh replay of `file` as built in `dir`; its CPU per event and its rate from first to last event. */
async function replay(dir, file, url, args, nodeFlags = []) {
  const outputs = [`${file}.cost-journal`, `${file}.cost-failed`];
  const run = await runWhIn(dir, ["replay", file, "--url", url, "--quiet", "--journal", outputs[0], "--dead-letter", outputs[1], ...args], nodeFlags);
  for (const output of outputs) rmSync(output, { force: true });
  if (run.code !== 0) throw new Error(`wh replay (${dir}) exited ${run.code}`);
  return { cpuUs: run.cpuUs / run.summary.delivered, rate: run.summary.eventsPerSecond };
}

/** bench/undici-loop.js, `order` "ordered" or "unordered", posting `via` request() or an Agent's dispatch(). */
async function loop(file, url, concurrency, events, nodeFlags = [], order = "unordered", via = "request") {
  const run = await runMeasured([...nodeFlags, fileURLToPath(new URL("./undici-loop.js", import.meta.url)), file, url, String(concurrency), order, via]);
  if (run.code !== 0) throw new Error(`bench/undici-loop.js exited ${run.code}`);
  return { cpuUs: run.cpuUs / events };
}

/** autocannon in this process: its CPU is this process's while it runs. */
async function cannon(url, connections, amount) {
  const body = sampleBody();
  const headers = { "content-type": "application/json", "x-signature": createHmac("sha1", "bench-secret").update(body).digest("hex") };
  const before = process.cpuUsage();
  const result = await autocannon({ url, method: "POST", connections, amount, body, headers });
  const cpu = process.cpuUsage(before);
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`autocannon: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const seconds = (new Date(result.finish) - new Date(result.start)) / 1000;
  return { cpuUs: (cpu.user + cpu.system) / result.requests.total, rate: result.requests.total / seconds };
}

/**
 * The garbage collector's share of a CPU profile's samples that are not idle, and its time per
 * event (µs): a program that does less besides collecting shows a larger share for the same
 * collecting, so both are printed.
 */
function gcShare(profileDir, events) {
  const [name] = readdirSync(profileDir).filter((each) => each.endsWith(".cpuprofile"));
  const profile = JSON.parse(readFileSync(join(profileDir, name), "utf8"));
  const kinds = new Map(profile.nodes.map((node) => [node.id, node.callFrame.functionName]));
  let busy = 0;
  let gc = 0;
  profile.samples.forEach((id, index) => {
    const kind = kinds.get(id);
    const ms = profile.timeDeltas[index] ?? 0;
    if (kind === "(idle)") return;
    busy += ms;
    if (kind === "(garbage collector)") gc += ms;
  });
  rmSync(profileDir, { recursive: true, force: true });
  // timeDeltas are in microseconds.
  return { share: gc / busy, gcUs: gc / events };
}

const profiled = () => {
  const dir = mkdtempSync(join(tmpdir(), "wh-cost-prof-"));
  return { dir, flags: ["--cpu-prof", `--cpu-prof-dir=${dir}`] };
};

/** Half the events are one user's ("whale"); the rest spread over 1,000 users (as bench/skewed.js). */
function writeSkewed(file, events) {
  const lines = [];
  for (let index = 0; index < events; index += 1) {
    const userId = index % 2 === 0 ? "whale" : `user-${Math.floor(1000 ** (((index * 7919) % 1000) / 1000))}`;
    lines.push(
      JSON.stringify({
        type: "track",
        userId,
        event: "Order Completed",
        properties: { n: index },
        messageId: `sk-${index}`,
        timestamp: "2026-11-21T09:30:08.276Z",
      }),
    );
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
}

/** Runs each named step once per round, in turn, and gathers what each returned. */
async function rotate(steps) {
  const runs = Object.fromEntries(Object.keys(steps).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, step] of Object.entries(steps)) {
      runs[name].push(await step());
      await settle();
    }
  }
  return runs;
}

const perRound = (runs, a, b, figure) => runs[a].map((run, round) => run[figure] / runs[b][round][figure]);

mkdirSync(dataDir, { recursive: true });
const file = `${dataDir}events-${EVENTS}.ndjson`;
if (!existsSync(file)) await generateEvents(file, EVENTS);
const skewed = `${dataDir}skewed-cost-${SKEWED_EVENTS}.ndjson`;
writeSkewed(skewed, SKEWED_EVENTS);
console.log(
  `replay cost (node bench/replay-cost.js; BENCH_ROUNDS=${ROUNDS} BENCH_EVENTS=${EVENTS} BENCH_SKEWED_EVENTS=${SKEWED_EVENTS}${baseline === undefined ? "; no WH_BASELINE: the f60d674 build is left out" : ` WH_BASELINE=${baseline}`}): medians [range] of ${ROUNDS} rounds taking turns`,
);

const fast = await startReceiverProcess();
try {
  const steps = {
    autocannon: () => cannon(fast.url, 64, EVENTS),
    "undici loop": () => loop(file, fast.url, 64, EVENTS),
    "dispatch loop": () => loop(file, fast.url, 64, EVENTS, [], "unordered", "dispatch"),
    "wh replay": () => replay(root, file, fast.url, ["--concurrency", "64"]),
    ...(baseline === undefined ? {} : { f60d674: () => replay(baseline, file, fast.url, ["--concurrency", "64"]) }),
  };
  const runs = await rotate(steps);
  for (const [name, each] of Object.entries(runs))
    console.log(
      `  ${name.padEnd(20)} ${describe(
        each.map((run) => run.cpuUs),
        1,
      )} µs CPU per event`,
    );
  if (baseline !== undefined) console.log(`  wh replay / f60d674, CPU per event: ${describe(perRound(runs, "wh replay", "f60d674", "cpuUs"))} (target <= 1)`);
  console.log(`  wh replay / autocannon, CPU per event: ${describe(perRound(runs, "wh replay", "autocannon", "cpuUs"))} (target <= 2.5)`);
  console.log(
    `  its floor, the bare dispatch loop (undici's own hooks, as wh's transport) / autocannon: ${describe(perRound(runs, "dispatch loop", "autocannon", "cpuUs"))}; wh over it: ${describe(perRound(runs, "wh replay", "dispatch loop", "cpuUs"))}`,
  );
  console.log(`  wh replay / undici loop, CPU per event: ${describe(perRound(runs, "wh replay", "undici loop", "cpuUs"))}`);

  const shares = await rotate({
    "wh replay": async () => {
      const { dir, flags } = profiled();
      await replay(root, file, fast.url, ["--concurrency", "64"], flags);
      return gcShare(dir, EVENTS);
    },
    "undici loop": async () => {
      const { dir, flags } = profiled();
      await loop(file, fast.url, 64, EVENTS, flags);
      return gcShare(dir, EVENTS);
    },
  });
  const gc = (name) => shares[name].map((run) => run.share * 100);
  console.log(
    `  GC share of the CPU profile: wh replay ${describe(gc("wh replay"), 1)}%, undici loop ${describe(gc("undici loop"), 1)}%; ratio ${describe(perRound(shares, "wh replay", "undici loop", "share"))} (target <= 2)`,
  );
  const gcUs = (name) => shares[name].map((run) => run.gcUs);
  console.log(
    `  GC time per event (profile samples): wh replay ${describe(gcUs("wh replay"), 2)} µs, undici loop ${describe(gcUs("undici loop"), 2)} µs; ratio ${describe(perRound(shares, "wh replay", "undici loop", "gcUs"))}`,
  );
} finally {
  await fast.stop();
}

const slow = await startReceiverProcess({ delayMs: 2 });
try {
  const runs = await rotate({
    ordered: () => replay(root, skewed, slow.url, ["--concurrency", "64"]),
    unordered: () => replay(root, skewed, slow.url, ["--concurrency", "64", "--ordered", "none"]),
    "loop, 1 at a time": () => loop(skewed, slow.url, 1, SKEWED_EVENTS),
    "loop, 64 at a time": () => loop(skewed, slow.url, 64, SKEWED_EVENTS),
    "loop, 64, ordered": () => loop(skewed, slow.url, 64, SKEWED_EVENTS, [], "ordered"),
  });
  console.log(`  ${SKEWED_EVENTS} events, one user holding half, receiver answering after 2 ms, --concurrency 64, µs CPU per event:`);
  for (const [name, each] of Object.entries(runs))
    console.log(
      `    ${name.padEnd(20)} ${describe(
        each.map((run) => run.cpuUs),
        1,
      )}`,
    );
  console.log(`  ordered / unordered, CPU per event: ${describe(perRound(runs, "ordered", "unordered", "cpuUs"))} (target <= 1)`);
  console.log(`  the bare loop 1 at a time / 64 at a time: ${describe(perRound(runs, "loop, 1 at a time", "loop, 64 at a time", "cpuUs"))}`);
  console.log(`  the floor, the bare loop ordered / unordered: ${describe(perRound(runs, "loop, 64, ordered", "loop, 64 at a time", "cpuUs"))}`);
  console.log(
    `  wh over the bare loop, ordered: ${describe(perRound(runs, "ordered", "loop, 64, ordered", "cpuUs"))}, unordered: ${describe(perRound(runs, "unordered", "loop, 64 at a time", "cpuUs"))}`,
  );
} finally {
  await slow.stop();
}

const latent = await startReceiverProcess({ delayMs: 50 });
try {
  // Warm: a fresh node:http server spends its first seconds compiling (see bench/in-flight.js).
  await cannon(latent.url, 512, 10_000);
  const runs = await rotate({
    autocannon: () => cannon(latent.url, 512, EVENTS),
    "wh replay": () => replay(root, file, latent.url, ["--concurrency", "512", "--ordered", "none"]),
  });
  const rates = (name) => runs[name].map((run) => run.rate);
  console.log(
    `  --concurrency 512, receiver answering after 50 ms, ${EVENTS} events: wh replay ${describe(rates("wh replay"), 0)} events/s, autocannon (512 connections) ${describe(rates("autocannon"), 0)}/s; wh / autocannon ${describe(perRound(runs, "wh replay", "autocannon", "rate"))} (target >= 0.95)`,
  );
} finally {
  await latent.stop();
}
