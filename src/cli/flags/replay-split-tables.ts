import { UsageError } from "../../core/errors.js";
import { shard, wholeNumber } from "./parsers.js";
import { flag } from "./spec.js";

/** How `wh replay` splits its input: across processes (--shard), and across threads in one (--workers). */

export const replayShard = flag({
  syntax: "--shard <i/n>",
  description: "deliver only the lines whose user hashes to shard i of n (0-based): n processes together deliver every line once",
  parse: shard,
  resume: true,
});

// More than 256 threads gain nothing on any machine wh runs on, and each holds its own connections.
const workerThreads = wholeNumber(1, 256);

export const replayWorkers = flag({
  syntax: "--workers <n|auto>",
  description: "threads delivering at once (default 1; auto: one per core; only 1 with --dry-run, --verbose or --rate): each user's lines on one, one journal",
  parse: (text: string, name: string): number | "auto" => {
    if (text === "auto") return "auto";
    try {
      return workerThreads(text, name);
    } catch (error) {
      throw error instanceof UsageError ? new UsageError(`${error.message}, or auto (one per core)`) : error;
    }
  },
  resume: true,
});
