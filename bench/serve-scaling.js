// How wh serve --queue scales: 1, 2 and 3 processes (accepting and forwarding) on one Redis
// server and on a Redis Cluster of 3 masters and 3 replicas (test/redis/redis-servers.mjs, the
// tests' cluster), autocannon posting batches of 100 events as an SDK does (16 connections in
// all) to a receiver in this process that answers 200 at once. Per run: events/s accepted
// (during the load) and delivered (until the last one arrived), and CPU per event read from
// /proc: the wh processes' together (accept and forward), the Redis masters' and replicas', the
// machine's busy cores, and what one wh process spends idle (CPU ms per second, before the load;
// /proc counts in 10 ms ticks). The configurations are interleaved in rounds (the machine is
// shared), and each process count is compared with one process in the same round.
// docs/scaling.md projects N machines from these figures. Skipped, with a line saying so, without
// redis-server.
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { cli, durableRedisArgs, freePort, REDIS_CLI, REDIS_SERVER, spawnRedis, startCluster } from "../test/redis/redis-servers.mjs";
import { uniqueBatchRequests } from "./generate.js";
import { cpuUs } from "./proc-stat.js";
import { postBatches, servesAccepted, startServeProcess } from "./wh-process.js";

const SECONDS = Number(process.env.BENCH_SCALING_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_SCALING_ROUNDS ?? 2);
const BATCH = 100;
const PARTITIONS = 64;
const PROCESSES = [1, 2, 3];
const auth = `Basic ${Buffer.from("bench:").toString("base64")}`;
const requests = uniqueBatchRequests(BATCH);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The machine's CPU time so far, busy and in all, from /proc/stat (in clock ticks, every core). */
function machineTicks() {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  // idle and iowait are not busy.
  return { busy: total - fields[3] - fields[4], total };
}

/** A receiver in this process: answers 200 at once, counts distinct messageIds (a duplicate counts once) and when the last came. */
async function startReceiver() {
  const state = { ids: new Set(), last: 0 };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      state.ids.add(JSON.parse(Buffer.concat(chunks).toString("utf8")).messageId);
      state.last = Date.now();
      response.writeHead(200, { "content-length": "0" }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    state,
    reset() {
      state.ids.clear();
      state.last = 0;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** One Redis server as wh's queue usually has it: appendonly yes, appendfsync everysec. */
async function singleTarget() {
  const dir = mkdtempSync(join(tmpdir(), "wh-bench-scaling-"));
  const port = await freePort();
  const child = await spawnRedis(durableRedisArgs(port, dir));
  return {
    name: "one Redis",
    url: `redis://127.0.0.1:${port}/0`,
    masters: [child.pid],
    replicas: [],
    spread: "",
    flush: () => cli(port, "flushall"),
    async stop() {
      child.kill("SIGKILL");
      await once(child, "exit");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The tests' cluster (appendonly yes, everysec): which partitions each master holds, and every node's pid. */
async function clusterTarget() {
  const cluster = await startCluster();
  // Until the replicas have joined their masters' shards (CLUSTER SHARDS lists a replica that
  // has not yet as a master of its own, without slots).
  let masters = await cluster.masters();
  while (masters.length !== 3) {
    await pause(200);
    masters = await cluster.masters();
  }
  const held = new Map(masters.map((port) => [port, 0]));
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const port = await cluster.masterOf(`{wh:serve:${partition}}:stream`);
    held.set(port, held.get(port) + 1);
  }
  const ports = cluster.nodes.map((node) => node.port);
  return {
    name: "cluster",
    url: cluster.nodes[0].url,
    masters: masters.map((port) => cluster.pid(port)),
    replicas: ports.filter((port) => !masters.includes(port)).map((port) => cluster.pid(port)),
    spread: ` (3 masters + 3 replicas; the ${PARTITIONS} partitions ${[...held.values()].join("/")} per master)`,
    flush: () => Promise.all(masters.map((port) => cli(port, "flushall"))),
    stop: () => cluster.stop(),
  };
}

const cpuOf = (pids) => pids.reduce((sum, pid) => sum + cpuUs(pid), 0);

/** `processes` wh serve processes on the target's fresh queue under SECONDS of load, then until every accepted event is delivered. */
async function runOnce(target, receiver, processes) {
  await target.flush();
  const serves = [];
  const args = ["--queue", target.url, "--partitions", String(PARTITIONS), "--url", receiver.url, "--concurrency", "64"];
  for (let index = 0; index < processes; index += 1) serves.push(await startServeProcess(args));
  // Let the forwarders share the partitions before the load starts; meanwhile, what they spend idle.
  const pids = serves.map((serve) => serve.pid);
  await pause(1_000);
  const idleFrom = cpuOf(pids);
  await pause(1_000);
  const idle = (cpuOf(pids) - idleFrom) / 1000 / processes;
  receiver.reset();
  const before = { wh: cpuOf(pids), masters: cpuOf(target.masters), replicas: cpuOf(target.replicas), machine: machineTicks() };
  const started = Date.now();
  await postBatches(serves, requests, SECONDS, auth);
  const acceptSeconds = (Date.now() - started) / 1000;
  const acceptedNow = () => servesAccepted(serves);
  let accepted = await acceptedNow();
  while (receiver.state.ids.size < accepted && Date.now() - Math.max(receiver.state.last, started) < 10_000) {
    await pause(100);
    accepted = await acceptedNow();
  }
  const machine = machineTicks();
  const after = { wh: cpuOf(pids), masters: cpuOf(target.masters), replicas: cpuOf(target.replicas) };
  await Promise.all(serves.map((serve) => serve.stop()));
  const delivered = receiver.state.ids.size;
  const perEvent = (key) => (after[key] - before[key]) / accepted;
  return {
    accepted: accepted / acceptSeconds,
    delivered: delivered / ((receiver.state.last - started) / 1000),
    lost: accepted - delivered,
    idle,
    wh: perEvent("wh"),
    masters: perEvent("masters"),
    replicas: perEvent("replicas"),
    busyCores: ((machine.busy - before.machine.busy) / (machine.total - before.machine.total)) * availableParallelism(),
  };
}

/** The middle value; of an even count, the mean of the two middle ones. */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
}
const range = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
const pad = (text, width) => String(text).padStart(width);

/** The table: per target and process count, the medians over the rounds, and the rates beside one process's of the same round. */
function printTable(targets, results) {
  console.log(
    `serve scaling (node bench/serve-scaling.js; BENCH_SCALING_SECONDS=${SECONDS}, BENCH_SCALING_ROUNDS=${ROUNDS}): ${availableParallelism()} cores; batches of ${BATCH}, 16 connections, --partitions ${PARTITIONS} --concurrency 64; medians of ${ROUNDS} rounds, × = beside 1 process in the same round (range)`,
  );
  console.log(
    `${"".padEnd(14)}${pad("accepted/s", 11)}${pad("×", 11)}${pad("delivered/s", 12)}${pad("×", 11)}${pad("wh µs/ev", 10)}${pad("master µs/ev", 13)}${pad("replica µs/ev", 14)}${pad("busy cores", 11)}${pad("idle ms/s", 10)}`,
  );
  for (const target of targets) {
    console.log(`${target.name}${target.spread}`);
    for (const processes of PROCESSES) {
      const runs = results.filter((result) => result.target === target && result.processes === processes);
      const ones = results.filter((result) => result.target === target && result.processes === 1);
      const ratio = (key) => range(runs.map((run) => run[key] / ones.find((one) => one.round === run.round)[key]));
      const m = (key, digits = 0) => median(runs.map((run) => run[key])).toFixed(digits);
      console.log(
        `${`  ${processes} process${processes === 1 ? "" : "es"}`.padEnd(14)}${pad(m("accepted"), 11)}${pad(ratio("accepted"), 11)}${pad(m("delivered"), 12)}${pad(ratio("delivered"), 11)}${pad(m("wh", 1), 10)}${pad(m("masters", 1), 13)}${pad(target.replicas.length === 0 ? "-" : m("replicas", 1), 14)}${pad(m("busyCores", 2), 11)}${pad(m("idle", 1), 10)}`,
      );
    }
  }
}

if (spawnSync(REDIS_SERVER, ["--version"]).status !== 0 || spawnSync(REDIS_CLI, ["--version"]).status !== 0) {
  console.log("serve scaling: skipped (no redis-server or redis-cli: apt-get install redis-server redis-tools)");
} else {
  const receiver = await startReceiver();
  const targets = [];
  try {
    targets.push(await singleTarget(), await clusterTarget());
    const results = [];
    for (let round = 0; round < ROUNDS; round += 1)
      for (const target of targets)
        for (const processes of PROCESSES) {
          const result = { target, processes, round, ...(await runOnce(target, receiver, processes)) };
          if (result.lost > 0) console.log(`serve scaling: ${target.name}, ${processes} processes: ${result.lost} accepted events not delivered within 10 s`);
          results.push(result);
        }
    printTable(targets, results);
  } finally {
    await receiver.close();
    await Promise.all(targets.map((target) => target.stop()));
  }
}
