// `npm run bench`: every benchmark in turn; each prints its own figures.
console.log("== cold start");
await import("./cold-start.js");
console.log("\n== replay throughput and memory");
await import("./replay.js");
console.log("\n== a 100 MB line");
await import("./long-line.js");
console.log("\n== ordered replay of skewed data (batches)");
await import("./skewed.js");
console.log("\n== thousands in flight (50 ms receiver)");
await import("./in-flight.js");
console.log("\n== wh serve accepting, beside a bare node:http server with the same group fdatasync");
await import("./serve-accept.js");
console.log("\n== wh serve with its webhook down: peak RSS filling, restarting and draining");
await import("./serve-backlog.js");
console.log("\n== wh serve, accept to delivery at a steady rate");
await import("./serve.js");
console.log("\n== wh serve with Redis Streams (one and three processes; accepting beside bare XADD loops)");
await import("./serve-redis.js");
