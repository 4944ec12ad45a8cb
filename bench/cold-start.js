// Cold start of `wh sign`, `wh verify` and `wh send` (one event to a local receiver in another
// process) against a bare `node -e 0` on the same machine. NODE_EXTRA_CA_CERTS and NODE_OPTIONS
// change what every Node process does at start (Node 20 reads and parses the extra certificates
// before running anything: 30 ms with Debian's bundle), so when the environment sets either, the
// figures are taken both ways, side by side: as inherited, and without them, as a user's shell
// usually is. The ratios differ a lot: the same milliseconds of wh over a larger bare start.
// Two floors are timed beside them: bench/hmac-file.cjs, a script that only signs the file (under
// `wh sign`), and bench/post-file.cjs, one that only signs and POSTs it with undici (under `wh send`).
// `wh send --dry-run` is timed in a directory whose config has no filters and in one whose config
// has one: the second loads @segment/tsub (its own file in the bundle), which the first must not pay for.
// Each run's CPU (user + system, every thread) is taken too, by bench/cpu-at-exit.cjs preloaded in
// every command alike, and printed beside the wall time. With WH_BASELINE=<dir>, the f60d674 build
// that bench/replay-cost.js compares with too (made as its header says), its `wh send` and `wh
// send --dry-run` take their turns in the same rounds, and wh's CPU over theirs is printed round
// by round (median and range).
// wh keeps a V8 code cache of its bundle in the user's cache folder (bin/wh.cjs): here that is a
// fresh XDG_CACHE_HOME, filled by the uncounted first rounds, so the figures are those of a user's
// second and later starts. (The f60d674 build uses Node 22's compile cache, in os.tmpdir().)
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 31);
const dir = mkdtempSync(join(tmpdir(), "wh-cold-"));
const body = join(dir, "body.json");
writeFileSync(body, '{"version":1,"type":"track","userId":"u1","event":"Order Completed"}');
/** A directory whose .whrc.json is `config`. */
function configDir(name, config) {
  const path = join(dir, name);
  mkdirSync(path);
  writeFileSync(join(path, ".whrc.json"), JSON.stringify(config));
  return path;
}
const noFilters = configDir("no-filters", { mode: "classic" });
const withFilters = configDir("filters", { mode: "classic", filters: [{ if: "event = 'Heartbeat'", actions: [{ type: "DROP" }] }] });
const inherited = { ...process.env, WH_SHARED_SECRET: "bench-secret", XDG_CACHE_HOME: join(dir, "cache") };
const STARTUP_VARIABLES = ["NODE_EXTRA_CA_CERTS", "NODE_OPTIONS"].filter((name) => (process.env[name] ?? "") !== "");
const clean = Object.fromEntries(Object.entries(inherited).filter(([name]) => !STARTUP_VARIABLES.includes(name)));
const environments =
  STARTUP_VARIABLES.length === 0
    ? [["", inherited]]
    : [
        ["as inherited", inherited],
        [`without ${STARTUP_VARIABLES.join(", ")}`, clean],
      ];

const CPU_AT_EXIT = fileURLToPath(new URL("./cpu-at-exit.cjs", import.meta.url));
const BASELINE = process.env.WH_BASELINE;

/** One run: its wall time and its CPU, in ms. */
function timeOnce({ args, env, cwd = root }) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, ["--require", CPU_AT_EXIT, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0 && !(args.includes("verify") && result.status === 1)) throw new Error(`${args.join(" ")} exited ${result.status}: ${result.stderr}`);
  return { ms, cpu: Number(/^wh-bench-cpu-us (\d+)$/m.exec(result.stderr)?.[1]) / 1000 };
}

const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];
const range = (times) => `${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)}`;

/** The commands take turns in every round, so a change in the machine's load hits all of them alike. */
function measure(commands) {
  // A few rounds first, not counted: right after a build the files are not yet in the page cache.
  for (let run = 0; run < 3; run += 1) for (const args of commands) timeOnce(args);
  const times = commands.map(() => ({ ms: [], cpu: [] }));
  for (let run = 0; run < RUNS; run += 1) {
    for (const [index, args] of commands.entries()) {
      const { ms, cpu } = timeOnce(args);
      times[index].ms.push(ms);
      times[index].cpu.push(cpu);
    }
  }
  return times.map(({ ms, cpu }) => ({ ms: median(ms), cpu: median(cpu), cpuRange: range(cpu), cpuRuns: cpu }));
}

/** Round by round, one command's CPU over another's, taken in the same round: the median and range. */
function ratioByRound(figures, base) {
  const ratios = figures.cpuRuns.map((cpu, run) => cpu / base.cpuRuns[run]);
  return `${median(ratios).toFixed(2)}x [${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}]`;
}

const receiver = spawn(process.execPath, [fileURLToPath(new URL("./receiver.js", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
const { port } = JSON.parse((await createInterface({ input: receiver.stdout })[Symbol.asyncIterator]().next()).value);
try {
  const send = ["bin/wh.cjs", "send", "track", "--user-id", "u1", "--event", "Order Completed", "--url", `http://127.0.0.1:${port}/hook`];
  const dryRun = [join(root, "bin/wh.cjs"), "send", "track", "--event", "X", "--user-id", "u", "--url", "http://127.0.0.1:9/", "--dry-run"];
  // [label, node's arguments, the target ratio or what the row is, the working directory (default: the repository)]
  const rows = [
    ["node -e 0", ["-e", "0"]],
    ["hmac-file", ["bench/hmac-file.cjs", body], "bench/hmac-file.cjs: the floor under wh sign, a Node script that only signs the file"],
    ["wh sign", ["bin/wh.cjs", "sign", body], 1.2],
    ["wh verify", ["bin/wh.cjs", "verify", "--signature", "0".repeat(40), body], 1.2],
    [
      "post-file",
      ["bench/post-file.cjs", body, `http://127.0.0.1:${port}/hook`],
      "bench/post-file.cjs: the floor under wh send, a Node script that only signs the file and POSTs it with undici's Agent",
    ],
    ["wh send", send, 2],
    ["dry, plain", dryRun, "wh send --dry-run, a config without filters", noFilters],
    ["dry, filter", dryRun, "wh send --dry-run, a config with a drop filter: loads @segment/tsub", withFilters],
    ...(BASELINE === undefined
      ? []
      : [
          ["send, base", [join(BASELINE, "bin/wh.cjs"), ...send.slice(1)], `wh send built at ${BASELINE}`],
          ["dry, base", [join(BASELINE, "bin/wh.cjs"), ...dryRun.slice(1)], `wh send --dry-run built at ${BASELINE}, a config without filters`, noFilters],
        ]),
  ];
  // The machine's 1-minute load average before and after: on a shared machine, what the figures were taken under.
  const load = () => loadavg()[0].toFixed(1);
  const loadBefore = load();
  const medians = measure(environments.flatMap(([, env]) => rows.map(([, args, , cwd]) => ({ args, env, cwd }))));
  console.log(
    `Node ${process.version}, medians of ${RUNS} interleaved runs: wall time, and CPU (user + system) with its range; load average ${loadBefore} -> ${load()}`,
  );
  for (const [index, [name]] of environments.entries()) {
    if (name !== "") console.log(`${name}${name === "as inherited" ? ` (${STARTUP_VARIABLES.join(", ")} set)` : ""}:`);
    const [bare, ...commands] = medians.slice(index * rows.length, (index + 1) * rows.length);
    const cpu = ({ cpu, cpuRange }) => `CPU ${cpu.toFixed(1)} ms [${cpuRange}]`;
    console.log(`  ${"node -e 0:".padEnd(13)} ${bare.ms.toFixed(1)} ms  ${cpu(bare)}`);
    commands.forEach((figures, command) => {
      const [label, , target] = rows[command + 1];
      console.log(
        `  ${`${label}:`.padEnd(13)} ${figures.ms.toFixed(1)} ms  ratio ${(figures.ms / bare.ms).toFixed(2)}  ${cpu(figures)} (${typeof target === "number" ? `target <= ${target}` : target})`,
      );
    });
    if (BASELINE !== undefined) {
      const byLabel = Object.fromEntries(commands.map((figures, command) => [rows[command + 1][0], figures]));
      console.log(
        `  CPU against the baseline, round by round: wh send ${ratioByRound(byLabel["wh send"], byLabel["send, base"])}, --dry-run ${ratioByRound(byLabel["dry, plain"], byLabel["dry, base"])}`,
      );
    }
  }
} finally {
  receiver.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}
