import { type CliIo, RetryNowRequests } from "./io.js";
import { REPLAY_WORKER_ARGUMENT } from "./replay-worker-argument.js";
import { runMain } from "./run-main.js";
import { tuneCollectorForServer } from "./server-heap.js";
import { TurnWriter } from "../output/turn-writer.js";

/**
 * Wires the process to runMain. The first Ctrl-C (or SIGTERM, SIGHUP) asks the running command to
 * stop cleanly; a second one exits at once. A closed standard output (`wh replay --json | head -1`)
 * stops a run the same way, resumably, and exits 141 (as a shell reports SIGPIPE): a run never
 * ends as a success with events unsent. SIGUSR1 asks the running command to retry its waiting
 * deliveries now (as the r key does on a terminal).
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const controller = new AbortController();
  // A TTY shows each line as it comes; a pipe or a file gets a turn's lines in one write.
  const stdout = process.stdout.isTTY === true ? process.stdout : new TurnWriter(process.stdout);
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts += 1;
    if (interrupts > 1) {
      if (stdout instanceof TurnWriter) stdout.flushNow();
      process.exit(130);
    }
    controller.abort();
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const signal of signals) process.on(signal, onSignal);
  const retryNow = new RetryNowRequests();
  // A listener also keeps Node from opening its debugger on SIGUSR1, as it would by default.
  const onRetrySignal = (): void => retryNow.request();
  process.on("SIGUSR1", onRetrySignal);
  let stdinTouched = false;
  // Raw mode (keys read one by one) ends with the process however it ends: a second Ctrl-C, a crash.
  process.on("exit", () => {
    if (stdinTouched && process.stdin.isTTY === true && process.stdin.isRaw) process.stdin.setRawMode(false);
  });
  let stdoutClosed = false;
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE" && !stdoutClosed) throw error;
    // The reader has gone: nothing more is written there, and the run stops as on Ctrl-C.
    stdoutClosed = true;
    controller.abort();
  });
  // A closed stderr loses the progress lines, never the run.
  process.stderr.on("error", () => undefined);
  const io: CliIo = {
    stdout,
    stderr: process.stderr,
    // Touching process.stdin sets up a TTY or pipe stream: only for the commands that read it.
    get stdin() {
      stdinTouched = true;
      return process.stdin;
    },
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
    retryNow,
    interrupt: onSignal,
    tuneForServer: tuneCollectorForServer,
  };
  let exitCode: number;
  try {
    exitCode = await runMain(argv, io);
  } finally {
    for (const signal of signals) process.off(signal, onSignal);
    process.off("SIGUSR1", onRetrySignal);
  }
  process.exitCode = stdoutClosed && exitCode === 130 ? 141 : exitCode;
}

// Not a top-level await: the CLI is bundled as CommonJS (scripts/bundle-cli.mjs). runMain settles
// every outcome itself; Node keeps running until the command's work is done. A worker thread of
// `wh replay --workers` runs this same file (its modules, its lazily loaded files) as a worker.
if (process.argv[2] === REPLAY_WORKER_ARGUMENT) void import("./replay-worker.js").then((worker) => worker.runReplayWorker());
else void main();
