import { shard, wholeNumber } from "./parsers.js";
import { flag } from "./spec.js";

/** How `wh replay` splits its input: across processes (--shard), and across threads in one (--workers). */

export const replayShard = flag({
  syntax: "--shard <i/n>",
  description: "deliver only the lines whose user hashes to shard i of n (0-based): n processes together deliver every line once",
  parse: shard,
  resume: true,
});

export const replayWorkers = flag({
  syntax: "--workers <n>",
  description: "threads delivering at once (default 1; only 1 with --dry-run, --verbose or --rate): each user's lines on one, one journal",
  // More than 256 threads gain nothing on any machine wh runs on, and each holds its own connections.
  parse: wholeNumber(1, 256),
  resume: true,
});
