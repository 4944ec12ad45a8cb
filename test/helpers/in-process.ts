import { runMain } from "../../src/cli/wiring/run-main.js";
import { cleanEnv, makeTempDir, type RunOptions, type RunResult, type WhChild, type WhProcess } from "./run-wh.js";
import { testIo } from "./test-io.js";

/** The signals whose first arrival stops a run cleanly: in-process, the io's interrupt. */
const STOPPING = new Set<NodeJS.Signals>(["SIGINT", "SIGTERM", "SIGHUP"]);

/**
 * The in-process twin of spawnWh: runMain against an in-memory io, against src/ (no build), under
 * coverage. Its `child.kill(…)` is the first Ctrl-C whatever the signal (SIGUSR1: "retry now", as
 * main.ts wires it): what a second Ctrl-C, SIGKILL, an exit code or a closed pipe do to the
 * process is for the spawned tests to check.
 */
export function inProcess(args: readonly string[], options: RunOptions & { cwd: string }): WhProcess {
  const test = testIo({
    cwd: options.cwd,
    env: cleanEnv(options.env),
    input: options.input,
    keepStdinOpen: options.keepStdinOpen,
    isTTY: options.isTTY,
    timings: options.timings,
    clock: options.clock,
    newId: options.newId,
  });
  const child: WhChild & { exitCode: number | null } = {
    stdin: test.stdin,
    exitCode: null,
    signalCode: null,
    pid: process.pid,
    kill: (signal = "SIGTERM") => {
      if (signal === "SIGUSR1") {
        test.io.retryNow?.request();
        return true;
      }
      // A test that means a crash (kill -9) or a paused process must spawn wh.
      if (!STOPPING.has(signal)) throw new Error(`wh in-process cannot take ${signal}: spawn it (spawnWh)`);
      test.interrupt();
      return true;
    },
  };
  const exited = runMain(args, test.io).then((code) => {
    child.exitCode = code;
    return test.output.close(code, null);
  });
  return { child, exited, ...test.output.reading };
}

/** The in-process twin of startWh: in a fresh temporary directory unless `cwd` is given. */
export async function startInProcess(args: readonly string[], options: RunOptions = {}): Promise<WhProcess> {
  return inProcess(args, { ...options, cwd: options.cwd ?? (await makeTempDir()) });
}

/** The in-process twin of run: runs wh to completion. */
export async function runInProcess(args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return (await startInProcess(args, options)).exited;
}
