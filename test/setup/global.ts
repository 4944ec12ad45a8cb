import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { TestProject } from "vitest/node";
import { type Survivor, survivors } from "../helpers/children.js";

declare module "vitest" {
  export interface ProvidedContext {
    testRun: string;
  }
}

/** How long a child killed at the end of its file may take to be gone (a SIGKILLed process is gone at once; its children see their pipes close). */
const GRACE_MS = 10_000;

/**
 * Once per project and run (vitest's globalSetup): names the run, and after it fails the run if a
 * process started by its tests is still alive, naming each one; those are then killed, so that
 * none receives a later run's events.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runId = randomUUID();
  project.provide("testRun", runId);
  return async () => {
    let left = survivors(runId);
    if (left === undefined) {
      process.stderr.write("the check for processes the tests left running needs /proc (Linux): skipped\n");
      return;
    }
    for (const deadline = Date.now() + GRACE_MS; left.length > 0 && Date.now() < deadline; left = survivors(runId) ?? []) await sleep(200);
    if (left.length === 0) return;
    for (const { pid } of left) killQuietly(pid);
    // vitest reports an error thrown here but still exits 0: the exit code says it.
    process.stderr.write(`${left.length} process(es) started by the tests of ${project.name} outlived them (killed now):\n${left.map(describe).join("\n")}\n`);
    process.exitCode = 1;
  };
}

const describe = ({ pid, command }: Survivor) => `  pid ${pid}: ${command}`;

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone in the meantime.
  }
}
