import { setFlagsFromString } from "node:v8";

// The V8 settings wh changes at run time, each for a measured reason. Both flags exist and are
// settable at run time on Node 20, 22 and 24 (a flag V8 does not know is refused with a line on
// stderr; the send and replay tests assert that line is absent); they change when V8 collects or optimizes,
// never what the program does.

/**
 * Keeps a long stream's memory flat and small. Replaying a large file allocates fast but keeps
 * little alive (about 18 MB); V8's default lets the old generation grow to several times that
 * between full collections, which took replay's peak RSS to ~175 MB on 1,000,000 events. A
 * growing factor of 2 brings it to ~135 MB at the same speed (bench/replay.js).
 */
export function limitHeapGrowth(): void {
  setFlagsFromString("--heap-growing-percent=100");
}

/**
 * For a process that sends a few requests and exits (`wh send`). undici parses answers with
 * llhttp compiled to WebAssembly; on Node 20 the first answer uses up V8's budget for optimizing
 * its parser, the optimizing compiler starts in the background, and Node waits for it before
 * exiting: about 45 ms of every `wh send` (bench/cold-start.js). Without the budget the parser
 * stays in V8's baseline code, which parses an answer or a few just as well. Set before undici
 * compiles the parser; long runs (replay, serve) keep the default and the optimized parser.
 */
export function keepWasmUnoptimized(): void {
  setFlagsFromString(`--wasm-tiering-budget=${2 ** 31 - 1}`);
}
