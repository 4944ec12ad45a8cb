// Preloaded with `node --import` into the process being measured: on exit, writes its peak
// resident set size and the CPU it used, {"maxRssKb": …, "cpuUs": …} (user + system,
// microseconds), to the file named by WH_BENCH_USAGE_FILE.
import { writeFileSync } from "node:fs";

process.on("exit", () => {
  const file = process.env.WH_BENCH_USAGE_FILE;
  if (!file) return;
  const usage = process.resourceUsage();
  writeFileSync(file, JSON.stringify({ maxRssKb: usage.maxRSS, cpuUs: usage.userCPUTime + usage.systemCPUTime }));
});
