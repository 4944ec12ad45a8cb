import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";

/**
 * Every process a test starts is registered here: test/setup/each-file.ts kills the ones still
 * running when their file ends (a test that timed out, or threw before its own cleanup), and
 * test/setup/global.ts fails the run if any process the tests started outlived it.
 *
 * Each child carries RUN_MARK=<run id> in its environment (the setup puts it in the worker's
 * process.env, which every spawn copies, and cleanEnv keeps), and so do its own children, such as
 * a wh started by `sh -c` or script(1): the check after the run finds them all in /proc, whoever
 * spawned them. A worker's own /proc/<pid>/environ is the one it started with, without the mark.
 */
export const RUN_MARK = "TEST_RUN_OF_WH";

const running = new Set<ChildProcess>();

/** Registers a child process for cleanup; returns it. */
export function tracked<Child extends ChildProcess>(child: Child): Child {
  if (child.exitCode !== null || child.signalCode !== null) return child;
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/** SIGKILLs every registered child still running, and waits for each to be gone. */
export async function killTracked(): Promise<void> {
  const alive = [...running].filter((child) => child.exitCode === null && child.signalCode === null);
  running.clear();
  await Promise.all(
    alive.map(async (child) => {
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    }),
  );
}

/**
 * Once per worker: should the worker itself be stopped (vitest interrupted, a worker stopped at a
 * timeout), its registered children are SIGKILLed on the way out, as no afterAll will run.
 */
export function killTrackedOnExit(): void {
  const key = Symbol.for("wh.test.killTrackedOnExit");
  const state = globalThis as { [key]?: true };
  if (state[key]) return;
  state[key] = true;
  const killAll = () => {
    for (const child of running) child.kill("SIGKILL");
  };
  process.on("exit", killAll);
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const)
    process.once(signal, () => {
      killAll();
      process.exit(code);
    });
  // An interrupted vitest (Ctrl-C) exits without stopping its forked workers: the worker sees the
  // channel to it close.
  process.once("disconnect", () => {
    killAll();
    process.exit();
  });
}

export interface Survivor {
  pid: number;
  command: string;
}

/** The processes whose environment carries this run's mark; undefined where there is no /proc to read. */
export function survivors(runId: string): Survivor[] | undefined {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const mark = `${RUN_MARK}=${runId}`;
  const found: Survivor[] = [];
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(mark)) continue;
      found.push({ pid: Number(pid), command: readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim() });
    } catch {
      // Gone since the listing, or not ours to read: not a survivor of this run.
    }
  }
  return found;
}
