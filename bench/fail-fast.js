// A replay of 50,000 events to a path that answers 404 (a typo in --url): how long it runs, how
// many lines it writes on stderr and how large its dead-letter file grows. Before --max-failures,
// every event failed on its own line; now the run stops after the identical failures in a row.
// `node bench/fail-fast.js [extra wh flags…]` (after npm run build).
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { generateEvents } from "./generate.js";
import { startReceiverProcess } from "./receiver-process.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const file = `${dataDir}fail-fast.ndjson`;
const leftovers = [`${file}.wh-journal`, `${file}.failed.ndjson`];

mkdirSync(dataDir, { recursive: true });
await generateEvents(file, EVENTS);
const receiver = await startReceiverProcess({ status: 404 });
for (const leftover of leftovers) rmSync(leftover, { force: true });
const started = process.hrtime.bigint();
const child = spawn(process.execPath, ["bin/wh.cjs", "replay", file, "--url", receiver.url, ...process.argv.slice(2)], {
  cwd: root,
  env: { ...process.env, WH_SHARED_SECRET: "bench-secret" },
  stdio: ["ignore", "pipe", "pipe"],
});
let stderr = "";
child.stderr.setEncoding("utf8").on("data", (chunk) => {
  stderr += chunk;
});
child.stdout.resume();
const code = await new Promise((resolve) => child.on("close", resolve));
const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
const requests = await receiver.stop();
let deadLetterBytes = 0;
try {
  deadLetterBytes = statSync(leftovers[1]).size;
} catch {
  // No dead letters at all.
}
const stderrLines = stderr.split("\n").filter((line) => line !== "").length;
console.log(
  `${EVENTS} events to a 404 path: exit ${code}, ${(wallMs / 1000).toFixed(1)} s, ${requests} requests, ${stderrLines} stderr lines, dead letters ${(deadLetterBytes / 1e6).toFixed(2)} MB`,
);
console.log(`last stderr lines:\n${stderr.trimEnd().split("\n").slice(-3).join("\n")}`);
for (const leftover of [...leftovers, file]) rmSync(leftover, { force: true });
