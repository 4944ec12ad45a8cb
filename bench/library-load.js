// Loading the library entry in a fresh process: require() of the CommonJS build (dist/index.cjs),
// import() of the ES module (dist/index.js), and require() of that ES module where this Node
// allows it without a flag (20.19+, 22.12+), against a bare `node -e 0`; medians of interleaved
// runs, with the sizes of what each reads. Needs `npm run build` first.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const RUNS = Number(process.env.BENCH_LIBRARY_RUNS ?? 31);
const rows = [
  ["node -e 0", ["-e", "0"]],
  ["require('wh'): dist/index.cjs", ["-e", 'require("./dist/index.cjs")']],
  ["import('wh'): dist/index.js", ["--input-type=module", "-e", 'await import("./dist/index.js")']],
  ["require(esm): dist/index.js", ["-e", 'require("./dist/index.js")']],
];

function timeOnce(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  return result.status === 0 ? Number(process.hrtime.bigint() - started) / 1e6 : undefined;
}

const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];
const times = rows.map(() => []);
for (let run = 0; run < RUNS + 3; run += 1) {
  for (const [index, [, args]] of rows.entries()) {
    const ms = timeOnce(args);
    // The first rounds are not counted: right after a build the files are not yet in the page cache.
    if (run >= 3 && ms !== undefined) times[index].push(ms);
  }
}
console.log(`Node ${process.version}, medians of ${RUNS}`);
for (const [index, [label]] of rows.entries()) {
  console.log(times[index].length === 0 ? `${label}: not possible on this Node` : `${label}: ${median(times[index]).toFixed(1)} ms`);
}
const kb = (file) => `${(statSync(new URL(`../dist/${file}`, import.meta.url)).size / 1024).toFixed(1)} KB`;
console.log(`dist/index.cjs ${kb("index.cjs")} (one file); dist/index.js ${kb("index.js")} and the tsc output it imports`);
