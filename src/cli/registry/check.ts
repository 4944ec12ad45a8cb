import { checkFlags } from "../flags/check-tables.js";
import { command, examples } from "./command-spec.js";

/** `wh check`: the conformance suite for the user's own receiver. */
export const check = command({
  path: ["check"],
  summary: "grade your webhook receiver against what Segment requires",
  description:
    "Send a battery of cases to your receiver (every type signed, bad and missing signatures, the edge bodies Segment really sends, a retry, a burst), one attempt each, and grade the answers. Exit 0 when every required case passes, 1 otherwise, 2 on bad usage.",
  args: [{ syntax: "<url>", description: "your receiver's URL, such as http://127.0.0.1:3000/hook" }],
  flags: checkFlags,
  help: `
Required cases must pass; advisory ones only warn. Without a secret the signature cases are
skipped. Nothing is sent anywhere but URL; --dry-run shows every request and sends nothing.
${examples(
  "wh check http://127.0.0.1:3000/hook --secret-file secret.txt",
  "wh check http://127.0.0.1:3000/hook --secret-file secret.txt --junit report.xml   # in CI",
  "wh check https://hooks.example.com/segment --mode actions --batch-size 10 --json",
  "wh check http://127.0.0.1:3000/hook --only alias,unicode --dry-run",
  "wh check http://127.0.0.1:3000/hook --scheme standard --secret-file whsec.txt   # Standard Webhooks",
)}`,
  run: async ({ args, flags, globals, io }) => (await import("../commands/check.js")).runCheck(args[0] ?? "", flags, globals, io),
});
