// Cold start of `wh sign`, `wh verify` and `wh send` (one event to a local receiver in another
// process) against a bare `node -e 0` on the same machine.
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
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

const receiver = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
const { port } = JSON.parse((await createInterface({ input: receiver.stdout })[Symbol.asyncIterator]().next()).value);
try {
  const send = ["bin/wh.cjs", "send", "track", "--user-id", "u1", "--event", "Order Completed", "--url", `http://127.0.0.1:${port}/hook`];
  const [bare, sign, verify, sent] = measure([["-e", "0"], ["bin/wh.cjs", "sign", body], ["bin/wh.cjs", "verify", "--signature", "0".repeat(40), body], send]);
  console.log(`node -e 0:  ${bare.toFixed(1)} ms (median of ${RUNS})`);
  console.log(`wh sign:    ${sign.toFixed(1)} ms  ratio ${(sign / bare).toFixed(2)} (target <= 1.2)`);
  console.log(`wh verify:  ${verify.toFixed(1)} ms  ratio ${(verify / bare).toFixed(2)} (target <= 1.2)`);
  console.log(`wh send:    ${sent.toFixed(1)} ms  ratio ${(sent / bare).toFixed(2)} (target <= 2)`);
} finally {
  receiver.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}
