// Preloaded with `node --import` into the process being measured: on exit, writes the peak
// resident set size (kilobytes) to the file named by WH_BENCH_RSS_FILE.
import { writeFileSync } from "node:fs";

process.on("exit", () => {
  const file = process.env.WH_BENCH_RSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
