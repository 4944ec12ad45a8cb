// Replay throughput against autocannon on the same receiver, and replay's peak RSS on a large file.
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { generateEvents, sampleBody } from "./generate.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const THROUGHPUT_EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const RSS_EVENTS = Number(process.env.BENCH_RSS_EVENTS ?? 1_000_000);
const CONCURRENCY = 64;
const SECRET = "bench-secret";

async function startReceiver() {
  const child = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const { port } = JSON.parse((await lines.next()).value);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    async stop() {
      child.kill("SIGTERM");
      const { value } = await lines.next();
      return value === undefined ? undefined : JSON.parse(value).requests;
    },
  };
}

function runReplay(file, url, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      ["--import", fileURLToPath(new URL("./peak-rss.js", import.meta.url)), "bin/wh.js", "replay", file, "--url", url, "--concurrency", String(CONCURRENCY), "--quiet"],
      { cwd: root, env: { ...process.env, WH_SHARED_SECRET: SECRET, ...extraEnv }, stdio: ["ignore", "pipe", "inherit"] },
    );
    // The human summary: "N delivered, … in 9.8s (10204 events/s)".
    let summary;
    createInterface({ input: child.stdout }).on("line", (line) => {
      const match = /^(\d+) delivered.*\((\d+) events\/s\)$/.exec(line);
      if (match) summary = { delivered: Number(match[1]), eventsPerSecond: Number(match[2]) };
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) return reject(new Error(`wh replay exited ${code}`));
      if (summary === undefined) return reject(new Error("wh replay printed no summary"));
      resolve({ summary, wallMs });
    });
  });
}

async function runAutocannon(url, body) {
  const result = await autocannon({
    url,
    method: "POST",
    connections: CONCURRENCY,
    amount: THROUGHPUT_EVENTS,
    body,
    headers: { "content-type": "application/json", "x-signature": createHmac("sha1", SECRET).update(body).digest("hex") },
  });
  const seconds = (new Date(result.finish) - new Date(result.start)) / 1000;
  return { requests: result.requests.total, non2xx: result.non2xx, errors: result.errors, perSecond: result.requests.total / seconds };
}

mkdirSync(dataDir, { recursive: true });
const throughputFile = `${dataDir}events-${THROUGHPUT_EVENTS}.ndjson`;
if (!existsSync(throughputFile)) await generateEvents(throughputFile, THROUGHPUT_EVENTS);

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000));

const receiver = await startReceiver();
try {
  // The two take turns, each round after a pause: whatever the machine is doing at one moment
  // weighs on both, and the figures are the medians of the rounds.
  const cannonRates = [];
  const replayRates = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const cannon = await runAutocannon(receiver.url, sampleBody());
    if (cannon.non2xx > 0 || cannon.errors > 0) throw new Error(`autocannon: ${cannon.non2xx} non-2xx, ${cannon.errors} errors`);
    cannonRates.push(cannon.perSecond);
    await settle();
    const replayed = await runReplay(throughputFile, receiver.url);
    if (replayed.summary.delivered !== THROUGHPUT_EVENTS) throw new Error(`wh replay delivered ${replayed.summary.delivered} of ${THROUGHPUT_EVENTS}`);
    replayRates.push((replayed.summary.delivered * 1000) / replayed.wallMs);
    await settle();
  }
  const cannonRate = median(cannonRates);
  const replayRate = median(replayRates);
  console.log(`autocannon: ${THROUGHPUT_EVENTS} requests x ${ROUNDS}, median ${Math.round(cannonRate)} req/s (${cannonRates.map(Math.round).join(", ")})`);
  console.log(`wh replay:  ${THROUGHPUT_EVENTS} events x ${ROUNDS}, median ${Math.round(replayRate)} events/s over the whole process, start-up included (${replayRates.map(Math.round).join(", ")})`);
  console.log(`ratio:      ${(replayRate / cannonRate).toFixed(3)} (target >= 0.6)`);

  if (RSS_EVENTS > 0) {
    const rssFile = `${dataDir}events-${RSS_EVENTS}.ndjson`;
    if (!existsSync(rssFile)) await generateEvents(rssFile, RSS_EVENTS);
    const rssOut = `${dataDir}peak-rss.txt`;
    const big = await runReplay(rssFile, receiver.url, { WH_BENCH_RSS_FILE: rssOut });
    const peakMb = Number(readFileSync(rssOut, "utf8")) / 1024;
    console.log(`peak RSS:   ${peakMb.toFixed(1)} MB replaying ${big.summary.delivered} events (${Math.round(big.summary.eventsPerSecond)} events/s) (target <= 150 MB)`);
    rmSync(rssOut);
  }
} finally {
  await receiver.stop();
}
