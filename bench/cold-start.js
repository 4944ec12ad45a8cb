// Cold start of `wh sign` and `wh verify` against a bare `node -e 0` on the same machine.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 31);
const dir = mkdtempSync(join(tmpdir(), "wh-cold-"));
const body = join(dir, "body.json");
writeFileSync(body, '{"version":1,"type":"track","userId":"u1","event":"Order Completed"}');
const env = { ...process.env, WH_SHARED_SECRET: "bench-secret" };

function timeOnce(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  if (result.status !== 0 && !(args.includes("verify") && result.status === 1)) throw new Error(`${args.join(" ")} exited ${result.status}: ${result.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];

/** The three commands take turns in every round, so a change in the machine's load hits all of them alike. */
function measure(commands) {
  // A few rounds first, not counted: right after a build the files are not yet in the page cache.
  for (let run = 0; run < 3; run += 1) for (const args of commands) timeOnce(args);
  const times = commands.map(() => []);
  for (let run = 0; run < RUNS; run += 1) commands.forEach((args, index) => times[index].push(timeOnce(args)));
  return times.map(median);
}

try {
  const [bare, sign, verify] = measure([["-e", "0"], ["bin/wh.js", "sign", body], ["bin/wh.js", "verify", "--signature", "0".repeat(40), body]]);
  console.log(`node -e 0:  ${bare.toFixed(1)} ms (median of ${RUNS})`);
  console.log(`wh sign:    ${sign.toFixed(1)} ms  ratio ${(sign / bare).toFixed(2)} (target <= 1.5)`);
  console.log(`wh verify:  ${verify.toFixed(1)} ms  ratio ${(verify / bare).toFixed(2)} (target <= 1.5)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
