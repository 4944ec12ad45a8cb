// Runs `wh` as its own process, the way a user does, and reports what it cost: exit code, wall
// time, the human summary line ("N delivered, … in 9.8s (10204 events/s)"), and its peak RSS and
// CPU (user + system), written on exit by the preloaded usage.js.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

const root = fileURLToPath(new URL("..", import.meta.url));
const usageModule = fileURLToPath(new URL("./usage.js", import.meta.url));
let runs = 0;

export function runWh(args, env = {}) {
  return runMeasured(["bin/wh.cjs", ...args], env);
}

/**
 * wh as built in another checkout (`dir`, holding bin/wh.cjs and its dist/: another commit's
 * build, for a side-by-side run), with Node flags of its own (`--cpu-prof`, …) before the script.
 */
export function runWhIn(dir, args, nodeFlags = []) {
  return runMeasured([...nodeFlags, "bin/wh.cjs", ...args], {}, dir);
}

/** The bare undici loop of bench/undici-loop.js over FILE, CONCURRENCY at a time: the yardstick of what wh adds to undici. */
export async function runUndiciLoop(file, url, concurrency, nodeFlags = []) {
  const run = await runMeasured([...nodeFlags, fileURLToPath(new URL("./undici-loop.js", import.meta.url)), file, url, String(concurrency)]);
  if (run.code !== 0) throw new Error(`bench/undici-loop.js exited ${run.code}`);
  return run;
}

/** Any Node script run as a user runs wh, measured alike. */
export function runMeasured(scriptAndArgs, env = {}, cwd = root) {
  runs += 1;
  const usageFile = join(tmpdir(), `wh-bench-usage-${process.pid}-${runs}.json`);
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, ["--import", usageModule, ...scriptAndArgs], {
      cwd,
      env: { ...process.env, WH_SHARED_SECRET: "bench-secret", ...env, WH_BENCH_USAGE_FILE: usageFile },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let summary;
    createInterface({ input: child.stdout }).on("line", (line) => {
      const match = /^(\d+) delivered.*\((\d+) events\/s\)$/.exec(line);
      if (match) summary = { delivered: Number(match[1]), eventsPerSecond: Number(match[2]) };
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      const { maxRssKb, cpuUs } = JSON.parse(readFileSync(usageFile, "utf8"));
      rmSync(usageFile, { force: true });
      resolve({ code, wallMs, summary, peakMb: maxRssKb / 1024, cpuUs });
    });
  });
}

/**
 * Starts `wh --json --quiet serve --port 0 …args` and resolves once it listens, with its URL and
 * its process id (for bench/proc-stat.js); wh as built in `dir` (another checkout's build, for a
 * side-by-side run) when given.
 */
export async function startServeProcess(args, dir = root) {
  const child = spawn(process.execPath, ["bin/wh.cjs", "--json", "--quiet", "serve", "--port", "0", "--max-body", "2mb", ...args], {
    cwd: dir,
    env: { ...process.env, WH_SHARED_SECRET: "bench-secret" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const closed = once(child, "close");
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let listening;
  while (listening === undefined) {
    const { value, done } = await lines.next();
    if (done) throw new Error(`wh serve ${args.join(" ")} ended before it listened`);
    listening = JSON.parse(value).listening;
  }
  // The rest of stdout (one record per request and delivery) is read and dropped.
  void (async () => {
    for await (const _ of lines);
  })();
  return {
    url: listening,
    pid: child.pid,
    /** SIGTERM: as Ctrl-C, which gives deliveries in flight up to 5 s. */
    async stop() {
      child.kill("SIGTERM");
      await closed;
    },
    /** SIGKILL, when what it holds no longer matters. */
    async kill() {
      child.kill("SIGKILL");
      await closed;
    },
  };
}

/**
 * Posts `requests` (batches) to each of `serves`' /v1/batch with autocannon for `seconds`, 16
 * connections in all shared among them; resolves with autocannon's results, one per serve.
 */
export function postBatches(serves, requests, seconds, auth) {
  return Promise.all(
    serves.map((serve) =>
      autocannon({
        url: `${serve.url}/v1/batch`,
        method: "POST",
        connections: Math.ceil(16 / serves.length),
        duration: seconds,
        requests,
        headers: { "content-type": "application/json", authorization: auth },
      }),
    ),
  );
}

/** The events `serves` say they accepted, together (autocannon does not count the requests its end cut off, which a server may still have taken). */
export async function servesAccepted(serves) {
  return (await Promise.all(serves.map((serve) => serveMetric(serve.url, "wh_serve_events_accepted_total")))).reduce((sum, count) => sum + count, 0);
}

/** A sample of wh serve's /metrics, `name` with its labels as printed (`wh_serve_spool_depth`); NaN when absent. */
export async function serveMetric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((each) => each.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}
