// Preloaded (node --require) by bench/cold-start.js into every command it times, alike: prints the
// process's CPU (user + system, every thread) on stderr as it exits, a line the bench reads.
"use strict";
process.on("exit", () => {
  const { user, system } = process.cpuUsage();
  require("node:fs").writeSync(2, `\nwh-bench-cpu-us ${user + system}\n`);
});
