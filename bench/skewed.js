// Ordered replay of skewed data: 20,000 events whose users follow a heavy-tailed distribution
// (one user holds more than half the events), a receiver in its own process answering after
// 20 ms, concurrency 64. Ordered per user one event at a time, unordered, and ordered in actions
// mode with batches of 100: batching is what lets one busy user's events move 100 at a time.
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, rmSync } from "node:fs";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const EVENTS = Number(process.env.BENCH_SKEWED_EVENTS ?? 20_000);
const DELAY_MS = 20;

/** User of event i: half go to one user, the rest to a Zipf-like tail over 1,000 users. */
function userOf(index) {
  if (index % 2 === 0) return "whale";
  const rank = Math.floor(1000 ** (((index * 7919) % 1000) / 1000));
  return `user-${rank}`;
}

mkdirSync(dataDir, { recursive: true });
const file = `${dataDir}skewed-${EVENTS}.ndjson`;
const out = createWriteStream(file);
for (let index = 0; index < EVENTS; index += 1) {
  const line = JSON.stringify({
    type: "track",
    userId: userOf(index),
    event: "Order Completed",
    properties: { n: index },
    messageId: `sk-${index}`,
    timestamp: "2026-11-21T09:30:08.276Z",
  });
  if (!out.write(`${line}\n`)) await once(out, "drain");
}
out.end();
await once(out, "finish");

const receiver = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url)), String(DELAY_MS)], {
  stdio: ["ignore", "pipe", "inherit"],
});
const lines = createInterface({ input: receiver.stdout })[Symbol.asyncIterator]();
const { port } = JSON.parse((await lines.next()).value);
const url = `http://127.0.0.1:${port}/hook`;

function replay(extra) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      [
        "bin/wh.cjs",
        "replay",
        file,
        "--url",
        url,
        "--concurrency",
        "64",
        "--quiet",
        "--journal",
        `${file}.journal`,
        "--dead-letter",
        `${file}.failed`,
        ...extra,
      ],
      {
        cwd: root,
        env: { ...process.env, WH_SHARED_SECRET: "bench-secret" },
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    child.on("error", reject);
    child.on("close", (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0) reject(new Error(`wh replay ${extra.join(" ")} exited ${code}`));
      else resolve(EVENTS / seconds);
    });
  });
}

try {
  const ordered = await replay([]);
  const unordered = await replay(["--ordered", "none"]);
  const batched = await replay(["--mode", "actions", "--batch-size", "100"]);
  const show = (rate) => `${Math.round(rate)} events/s`;
  console.log(`skewed:     ${EVENTS} events, one user holding half, receiver answering after ${DELAY_MS} ms, concurrency 64`);
  console.log(`  ordered per user:              ${show(ordered)}`);
  console.log(`  unordered:                     ${show(unordered)}`);
  console.log(`  ordered, actions, batches of 100: ${show(batched)} (${(unordered / batched).toFixed(2)}x from unordered; target within 2x)`);
} finally {
  receiver.kill("SIGTERM");
  for (const each of [file, `${file}.journal`, `${file}.failed`]) rmSync(each, { force: true });
}
