// `npm run bench`: every benchmark in turn; each prints its own figures.
console.log("== cold start");
await import("./cold-start.js");
console.log("\n== verifyRequest beside the bare HMAC and JSON.parse (one event, an Actions batch of 100)");
await import("./verify-request.js");
console.log("\n== wh serve's duplicate window: bytes per id");
await import("./recent-ids.js");
console.log("\n== wh listen --ui through 60,000 requests while its page reads nothing (RSS beside no page)");
await import("./inspector-stall.js");
console.log("\n== wh serve dead-letters list, list --json and replay: peak RSS at 50,000 and 1,000,000 letters beside a bare read of the file");
await import("./dead-letters.js");
console.log("\n== replay throughput and memory");
await import("./replay.js");
console.log("\n== replay of 50,000 events to a 404 path (--max-failures)");
await import("./fail-fast.js");
console.log("\n== wh samples generate: peak RSS from 10,000 to 1,000,000 events, beside a bare loop writing as many lines");
await import("./samples-generate.js");
console.log("\n== a 100 MB line");
await import("./long-line.js");
console.log("\n== ordered replay of skewed data (batches)");
await import("./skewed.js");
console.log("\n== thousands in flight (50 ms receiver)");
await import("./in-flight.js");
console.log(
  "\n== replay cost beside its floors: the f60d674 build (WH_BASELINE), autocannon, the bare undici loop; GC share; ordered with a hot user; 512 in flight",
);
await import("./replay-cost.js");
console.log("\n== wh serve accepting, beside a bare node:http server with the same group fdatasync");
await import("./serve-accept.js");
console.log("\n== wh serve's CPU per accepted event with 1, 10 and 100 sources (webhook down)");
await import("./serve-sources.js");
console.log("\n== wh serve with its webhook down: peak RSS filling, restarting and draining");
await import("./serve-backlog.js");
console.log("\n== wh serve, its webhook back: the backlog drained left to the retry schedule, and after POST /retry");
await import("./serve-retry-now.js");
console.log("\n== wh serve, accept to delivery at a steady rate");
await import("./serve.js");
console.log("\n== wh serve with Redis Streams (one and three processes; accepting beside bare XADD loops)");
await import("./serve-redis.js");
