import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { EXTRAS, extrasInstalled as installed } from "./scripts/test-extras.mjs";

// Two projects. "contributor" (npm test) is what a change needs checked, in minutes; "heavy" (npm
// run test:heavy) is what takes a machine's worth of time or processes: the packed package in
// consumer projects, the frameworks' own apps (next build), the inspector under 20,000 requests,
// the descriptor limit, Redis outages. CI (.ci/run) runs both.
//
// Budgets are a net for a test that hangs, never a verdict on the machine's speed: several times
// what the slowest test of the project was measured to take on a busy 2-core machine. Contributor:
// 43 s at load 8 to 13 (a crash-restart of wh serve), 61 s at load 20 (sh quoting of the
// inspector's commands); heavy: 93 s at load 8 to 13 (next build), 164 s and 255 s at load 20
// (next build; the inspector under 20,000 requests).

// The tests of the frameworks and of Segment's oracle run only where their package is installed.
const extrasInstalled = installed();
if (!extrasInstalled && process.env.WH_REQUIRE_SERVICES === "1")
  throw new Error(`WH_REQUIRE_SERVICES=1 but ${EXTRAS} is not installed (npm run test:install-extras)`);
// vitest evaluates this file once for itself and once per project: the line is said once.
const said = Symbol.for("wh.extras-skipped");
if (!extrasInstalled && !(said in globalThis)) {
  Object.assign(globalThis, { [said]: true });
  process.stderr.write(`framework and oracle tests skipped (${EXTRAS}/*.test.ts): their packages are not installed (npm run test:install-extras)\n`);
}
const extras = (files: string) => (extrasInstalled ? [`${EXTRAS}/${files}`] : []);

const HEAVY = [
  "test/integration/package-*.test.ts",
  "test/browser/inspector-volume.test.ts",
  "test/integration/descriptor-limit.test.ts",
  "test/redis/redis-outage.test.ts",
  // A real 6-node Redis Cluster, 30,000 events through each of three failovers (a 20 s freeze
  // among them): 267-299 s for the file (seven runs), 68-100 s a failover test (budget 240 s each).
  "test/redis/serve-redis-cluster.test.ts",
  `${EXTRAS}/package-*.test.ts`,
];

// Most tests wait on sockets, timers and child processes, not on the CPU: measured on 2 cores,
// one worker took 154 s, four 64 s (six 68 s). The heavy tests each keep a core busy (a build, a
// browser, a flood of requests): one worker per core.
const cores = availableParallelism();

export default defineConfig({
  test: {
    pool: "forks",
    unstubEnvs: true,
    globalSetup: ["test/setup/global.ts"],
    setupFiles: ["test/setup/each-file.ts"],
    // expect.poll's default deadline (1 s) would make a busy machine's slowness a failure.
    expect: { poll: { timeout: 60_000 } },
    projects: [
      {
        extends: true,
        test: {
          name: "contributor",
          include: ["test/**/*.test.ts", ...extras("*.test.ts")],
          exclude: HEAVY,
          testTimeout: 300_000,
          hookTimeout: 300_000,
          maxWorkers: 2 * cores,
          // Each worker imports src/ and its libraries once, not once per file (64 s → 49 s). Nothing
          // in src/ keeps state a command leaves behind, and stubbed variables are put back.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "heavy",
          include: HEAVY.filter((pattern) => extrasInstalled || !pattern.startsWith(EXTRAS)),
          testTimeout: 900_000,
          hookTimeout: 900_000,
          maxWorkers: cores,
          sequence: { groupOrder: 1 },
        },
      },
    ],
    // `vitest run --coverage` (npm test): src/ as the contributor tests reach it, in-process. What
    // a spawned bin/wh.cjs runs is not counted (it runs the bundle in dist/, in another process).
    // The floor sits a little under what was measured, as timing decides a few branches; without
    // Redis and Chromium (a plain `npm test` on a machine without them skips those tests) the
    // queue's modules are not run, so the floor is lower there.
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      // The inspector page's script runs in Chromium (test/browser checks what it does), and
      // main.ts only wires the process to runMain (the spawned tests run it). `replay --workers`
      // runs its threads from the bundle (dist/cli-bundle/main.cjs), so it cannot run in-process:
      // its parent and worker sides are tested spawned (test/cli/commands/replay-workers.test.ts),
      // and in-process a replay runs on one worker, the path every other replay test covers.
      exclude: [
        "src/browser/**",
        "src/cli/wiring/main.ts",
        "src/cli/wiring/replay-on-workers.ts",
        "src/cli/wiring/replay-worker.ts",
        "src/engine/replay-workers.ts",
        "src/engine/replay-worker-side.ts",
      ],
      reporter: ["text-summary"],
      thresholds:
        process.env.WH_REQUIRE_SERVICES === "1"
          ? { lines: 95, branches: 86, functions: 95, statements: 93 }
          : { lines: 86, branches: 81, functions: 83, statements: 84 },
    },
  },
});
