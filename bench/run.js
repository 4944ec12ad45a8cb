// `npm run bench`: every benchmark in turn; each prints its own figures.
console.log("== cold start");
await import("./cold-start.js");
console.log("\n== replay throughput and memory");
await import("./replay.js");
