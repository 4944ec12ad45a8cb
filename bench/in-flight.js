// Thousands in flight: a receiver in its own process answering after 50 ms, and wh replay at
// --concurrency 512 and 2048 (unordered, so latency is the only limit: 512 / 50 ms = 10,240
// events/s at most). Prints events/s against that ceiling, and the peak RSS.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateEvents } from "./generate.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const DELAY_MS = 50;

mkdirSync(dataDir, { recursive: true });
const receiver = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url)), String(DELAY_MS)], { stdio: ["ignore", "pipe", "inherit"] });
const { port } = JSON.parse((await createInterface({ input: receiver.stdout })[Symbol.asyncIterator]().next()).value);
const url = `http://127.0.0.1:${port}/hook`;

function replay(file, concurrency) {
  const rssOut = `${dataDir}in-flight-rss.txt`;
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      ["--import", fileURLToPath(new URL("./peak-rss.js", import.meta.url)), "bin/wh.js", "replay", file, "--url", url, "--concurrency", String(concurrency), "--ordered", "none", "--quiet", "--journal", `${file}.journal`, "--dead-letter", `${file}.failed`],
      { cwd: root, env: { ...process.env, WH_SHARED_SECRET: "bench-secret", WH_BENCH_RSS_FILE: rssOut }, stdio: ["ignore", "ignore", "inherit"] },
    );
    child.on("error", reject);
    child.on("close", (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0) return reject(new Error(`wh replay exited ${code}`));
      const peakMb = Number(readFileSync(rssOut, "utf8")) / 1024;
      rmSync(rssOut);
      resolve({ seconds, peakMb });
    });
  });
}

try {
  for (const [concurrency, events] of [
    [512, 50_000],
    [2048, 100_000],
  ]) {
    const file = `${dataDir}events-${events}.ndjson`;
    if (!existsSync(file)) await generateEvents(file, events);
    const { seconds, peakMb } = await replay(file, concurrency);
    const ceiling = (concurrency * 1000) / DELAY_MS;
    const rate = events / seconds;
    console.log(`in flight:  --concurrency ${concurrency}, ${events} events, receiver after ${DELAY_MS} ms: ${Math.round(rate)} events/s = ${((rate / ceiling) * 100).toFixed(0)}% of the ${ceiling} events/s latency allows (whole process, start-up included); peak RSS ${peakMb.toFixed(1)} MB`);
    for (const each of [`${file}.journal`, `${file}.failed`]) rmSync(each, { force: true });
  }
} finally {
  receiver.kill("SIGTERM");
}
