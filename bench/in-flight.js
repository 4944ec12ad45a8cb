// Thousands in flight: a receiver in its own process answering after 50 ms, and wh replay at
// --concurrency 512 and 2048 (unordered, so latency is the only limit: 512 / 50 ms = 10,240
// events/s at most). Prints events/s against that ceiling, and the peak RSS. The receiver is warmed
// up first with one unmeasured run: a fresh node:http server spends its first seconds compiling,
// and a receiver in service is warm.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateEvents } from "./generate.js";
import { runWh } from "./wh-process.js";

const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const DELAY_MS = 50;

mkdirSync(dataDir, { recursive: true });
const receiver = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url)), String(DELAY_MS)], { stdio: ["ignore", "pipe", "inherit"] });
const { port } = JSON.parse((await createInterface({ input: receiver.stdout })[Symbol.asyncIterator]().next()).value);
const url = `http://127.0.0.1:${port}/hook`;

async function replay(file, concurrency) {
  const run = await runWh(["replay", file, "--url", url, "--concurrency", String(concurrency), "--ordered", "none", "--quiet", "--journal", `${file}.journal`, "--dead-letter", `${file}.failed`]);
  if (run.code !== 0) throw new Error(`wh replay exited ${run.code}`);
  return run;
}

try {
  const warmUp = `${dataDir}events-50000.ndjson`;
  if (!existsSync(warmUp)) await generateEvents(warmUp, 50_000);
  await replay(warmUp, 512);
  for (const [concurrency, events] of [
    [512, 50_000],
    [2048, 100_000],
  ]) {
    const file = `${dataDir}events-${events}.ndjson`;
    if (!existsSync(file)) await generateEvents(file, events);
    const { wallMs, summary, peakMb } = await replay(file, concurrency);
    const ceiling = (concurrency * 1000) / DELAY_MS;
    const share = (rate) => `${((rate / ceiling) * 100).toFixed(1)}%`;
    const whole = (events * 1000) / wallMs;
    console.log(
      `in flight:  --concurrency ${concurrency}, ${events} events, receiver after ${DELAY_MS} ms: ${summary.eventsPerSecond} events/s from first to last event = ${share(summary.eventsPerSecond)} of the ${ceiling} events/s latency allows (target >= 90% at 512); ${Math.round(whole)}/s = ${share(whole)} over the whole process, start-up included; peak RSS ${peakMb.toFixed(1)} MB (target < 250 MB at 2048)`,
    );
    for (const each of [`${file}.journal`, `${file}.failed`]) rmSync(each, { force: true });
  }
} finally {
  receiver.kill("SIGTERM");
}
