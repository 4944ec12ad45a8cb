import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Measured on this 2-core machine (test/cli, integration, core and adapters, 79 files):
    // vitest's default of one worker per core but one (here: 1) took 154 s; 4 forks 64 s (6: 68 s,
    // 4 threads: 69 s): most tests wait on sockets and timers, not on the CPU. Without isolation
    // (each worker imports src/ and its libraries once, not once per file) 49 s. Nothing in src/
    // keeps state a command leaves behind, and stubbed variables are put back after each test.
    pool: "forks",
    maxWorkers: 4,
    isolate: false,
    unstubEnvs: true,
    // `vitest run --coverage` (npm test): src/ as the tests reach it, in-process. What a spawned
    // bin/wh.cjs runs is not counted (it runs the bundle in dist/, in another process). The floor
    // sits a little under what was measured, as timing decides a few branches; without Redis and
    // Chromium (a plain `npm test` on a machine without them skips those tests) the queue's modules
    // are not run, so the floor is lower there. Measured with every service (WH_REQUIRE_SERVICES=1):
    // lines 96.2%, branches 87.8%, functions 96.0%, statements 94.3%; without: 87.3%, 82.9%, 83.9%,
    // 85.5%.
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      // The inspector page's script runs in Chromium (test/browser checks what it does), and
      // main.ts only wires the process to runMain (the spawned tests run it).
      exclude: ["src/browser/**", "src/cli/main.ts"],
      reporter: ["text-summary"],
      thresholds:
        process.env.WH_REQUIRE_SERVICES === "1"
          ? { lines: 95, branches: 86, functions: 95, statements: 93 }
          : { lines: 86, branches: 81, functions: 83, statements: 84 },
    },
  },
});
