// Thousands in flight: a receiver in its own process answering after 50 ms, and wh replay at
// --concurrency 512 and 2048 (unordered, so latency is the only limit: 512 / 50 ms = 10,240
// events/s at most). Prints events/s against that ceiling, and the peak RSS. The receiver is warmed
// up first with one unmeasured run: a fresh node:http server spends its first seconds compiling,
// and a receiver in service is warm.
// Two figures put the 512 one in context. The bare undici loop (bench/undici-loop.js) at 512 over
// the same file and receiver: what undici alone reaches on this machine. And wh at 512 against a
// receiver answering after 200 ms, where the machine's CPU is not short: if connections per
// origin, keep-alive or the pool's read-ahead held wh back, they would show there too.
// A run's rate from first to last event includes its first seconds, while Node compiles the code
// that is hot and the first 512 requests, started together, still come back together: so the 512
// figures are also given after the first two seconds, as the receiver counted them, second by second.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { generateEvents } from "./generate.js";
import { startReceiverProcess } from "./receiver-process.js";
import { runUndiciLoop, runWh } from "./wh-process.js";

const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const DELAY_MS = 50;
const SLOW_DELAY_MS = 200;

const share = (rate, ceiling) => `${((rate / ceiling) * 100).toFixed(1)}%`;

/** The median of the seconds after the first two, the last (cut short) left out. */
function steadyRate(perSecond) {
  const steady = perSecond.slice(2, -1).sort((a, b) => a - b);
  return steady.length === 0 ? undefined : steady[Math.floor(steady.length / 2)];
}

const describeSteady = (perSecond, ceiling) => {
  const rate = steadyRate(perSecond);
  return rate === undefined
    ? "too short to tell after its first two seconds"
    : `after its first two seconds ${rate}/s = ${share(rate, ceiling)} (median; each second at the receiver: ${perSecond.join(" ")})`;
};

async function eventsFile(events) {
  const file = `${dataDir}events-${events}.ndjson`;
  if (!existsSync(file)) await generateEvents(file, events);
  return file;
}

async function replay(file, url, concurrency) {
  const run = await runWh([
    "replay",
    file,
    "--url",
    url,
    "--concurrency",
    String(concurrency),
    "--ordered",
    "none",
    "--quiet",
    "--journal",
    `${file}.journal`,
    "--dead-letter",
    `${file}.failed`,
  ]);
  if (run.code !== 0) throw new Error(`wh replay exited ${run.code}`);
  for (const each of [`${file}.journal`, `${file}.failed`]) rmSync(each, { force: true });
  return run;
}

mkdirSync(dataDir, { recursive: true });
const receiver = await startReceiverProcess({ delayMs: DELAY_MS });
const slowReceiver = await startReceiverProcess({ delayMs: SLOW_DELAY_MS });
try {
  await replay(await eventsFile(50_000), receiver.url, 512);
  await receiver.perSecond();
  for (const [concurrency, events] of [
    [512, 50_000],
    [2048, 100_000],
  ]) {
    const file = await eventsFile(events);
    const { wallMs, summary, peakMb } = await replay(file, receiver.url, concurrency);
    const perSecond = await receiver.perSecond();
    const ceiling = (concurrency * 1000) / DELAY_MS;
    const whole = (events * 1000) / wallMs;
    console.log(
      `in flight:  --concurrency ${concurrency}, ${events} events, receiver after ${DELAY_MS} ms: ${summary.eventsPerSecond} events/s from first to last event = ${share(summary.eventsPerSecond, ceiling)} of the ${ceiling} events/s latency allows (target >= 90% at 512); ${Math.round(whole)}/s = ${share(whole, ceiling)} over the whole process, start-up included; peak RSS ${peakMb.toFixed(1)} MB (target < 250 MB at 2048)`,
    );
    if (concurrency === 512) {
      console.log(`            wh replay ${describeSteady(perSecond, ceiling)}`);
      const loop = await runUndiciLoop(file, receiver.url, 512);
      const loopRate = (events * 1000) / loop.wallMs;
      console.log(
        `            the bare undici loop at 512 on the same file and receiver: ${Math.round(loopRate)}/s = ${share(loopRate, ceiling)} over the whole process, ${(loop.cpuUs / events).toFixed(1)} µs of CPU per event, peak RSS ${loop.peakMb.toFixed(1)} MB; ${describeSteady(await receiver.perSecond(), ceiling)}`,
      );
    }
  }
  const slowEvents = 25_000;
  const slowCeiling = (512 * 1000) / SLOW_DELAY_MS;
  const { summary } = await replay(await eventsFile(slowEvents), slowReceiver.url, 512);
  console.log(
    `            --concurrency 512, ${slowEvents} events, receiver after ${SLOW_DELAY_MS} ms: ${summary.eventsPerSecond} events/s = ${share(summary.eventsPerSecond, slowCeiling)} of the ${slowCeiling} events/s latency allows`,
  );
} finally {
  await Promise.all([receiver.stop(), slowReceiver.stop()]);
}
