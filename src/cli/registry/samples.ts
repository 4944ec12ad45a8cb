import { generateFlags, samplesFlags } from "../flags/samples-tables.js";
import { command, examples } from "./command-spec.js";

/** `wh samples` and `wh samples generate`: Segment's Spec events, one at a time or as traffic. */

const samples = command({
  path: ["samples"],
  summary: "the catalogue of Segment's Spec events (wh send --sample sends one)",
  description:
    "List the catalogue of Segment's Spec events: E-commerce v2, B2B SaaS, Video, Mobile lifecycle, and identify, group, page, screen and alias with their semantic fields. Each has realistic values of the types the Spec documents.",
  flags: samplesFlags,
  help: `
The names, properties and types are the Spec's (https://segment.com/docs/connections/spec/);
the values are invented. --json prints each sample's whole message.
${examples(
  "wh samples --spec ecommerce",
  'wh send --sample "Order Completed" --url http://127.0.0.1:4000/hook',
  'wh send --sample "Signed Up" --user-id u-42 --prop first_name=Ada --dry-run',
  "wh --json samples | jq -c .message",
)}`,
  run: async ({ flags, globals, io }) => (await import("../commands/samples.js")).runSamples(flags, globals, io),
});

const generate = command({
  path: ["samples", "generate"],
  summary: "write realistic Segment traffic as NDJSON, reproducible with --seed",
  description:
    "Write realistic Segment traffic as NDJSON: visitors of an invented shop browsing, searching, adding to carts, checking out and ordering, signing up (an alias from their anonymous id, an identify, their company's group) and coming back, every visitor's messages in time order, the visitors interleaved by time.",
  flags: generateFlags,
  help: `
Streamed: memory grows with --users, not with --events. The same --seed (and --start) writes
the same bytes; without one, the seed used is printed on stderr. The lines are ready for
wh replay and wh ingest.
${examples(
  "wh samples generate --users 1000 --events 100000 --seed 42 --out traffic.ndjson",
  "wh samples generate --events 500 | wh replay - --url http://127.0.0.1:4000/hook",
  "wh samples generate --users 50 --events 2000 --seed 7 | wh ingest - --write-key $WH_WRITE_KEY",
)}`,
  run: async ({ flags, globals, io }) => (await import("../commands/samples.js")).runGenerate(flags, globals, io),
});

export const samplesCommands = [samples, generate];
