/**
 * Turns off V8's allocation-site pretenuring in `wh serve`'s process. Pretenuring allocates the
 * objects of a site straight into the old generation once that site's objects were seen to survive
 * collections of the young one. A server's start-up can look so: with 100 sources and their webhook
 * down, each source's forwarder holds its first events (a request's parsed body, the records made
 * of it) while it retries them, and the sites that parse and accept a request were pretenured.
 * From then on, for the rest of the run, every request's objects went to the old generation, which
 * was then collected whole again and again: 200 ms of collection a second against 60, and 20 µs of
 * CPU per accepted event against 11, in about one start of two (bench/serve-sources.js). Without
 * it, accepted objects die young, as they do: no configuration measured costs more (docs/measured.md).
 * Loading node:v8 costs 1.2 ms of start-up: only wh serve asks for it.
 */
export function tuneCollectorForServer(): void {
  process.getBuiltinModule("node:v8").setFlagsFromString("--no-allocation-site-pretenuring");
}
