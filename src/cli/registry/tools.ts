import { listenFlags } from "../flags/server-tables.js";
import { completionFlags, configShowFlags, configValidateFlags, signFlags, verifyFlags } from "../flags/tables.js";
import { command, examples } from "./command-spec.js";
import { CONFIG_HELP } from "./help.js";

/** The commands that sign, verify, receive, configure and show: sign, verify, listen, config, demo, completion. */

export const sign = command({
  path: ["sign"],
  summary: "print the X-Signature of a body",
  description: "Print the X-Signature (hex HMAC-SHA1) of a body's exact bytes, or with --scheme standard its webhook-signature.",
  args: [{ syntax: "[file]", description: "the body; standard input when omitted or -" }],
  flags: signFlags,
  help: examples(
    "wh sign --secret-file secret.txt body.json",
    "printf '%s' \"$BODY\" | WH_SHARED_SECRET=s3cret wh sign",
    "wh sign --scheme standard --secret-file whsec.txt --id msg_1 --timestamp 1674087231 body.json",
  ),
  run: async ({ args, flags, globals, io }) => (await import("../commands/sign.js")).runSign(args[0], flags, globals, io),
});

export const verify = command({
  path: ["verify"],
  summary: "check a body's X-Signature",
  description:
    "Check a body's X-Signature (or with --scheme standard its webhook-signature). Exit 0 when it matches, 1 when it does not (or is malformed), 2 on bad usage.",
  args: [{ syntax: "[file]", description: "the body; standard input when omitted or -" }],
  flags: verifyFlags,
  help: examples(
    "cat body.json | wh verify --secret-file secret.txt --signature 8b3e…",
    'wh verify --signature "$SIG" --explain body.json   # secret from WH_SHARED_SECRET',
    "wh verify --capture captured.ndjson --secret-file secret.txt",
    'wh verify --scheme standard --secret-file whsec.txt --id msg_1 --timestamp 1674087231 --signature "v1,K5oZ…" body.json',
  ),
  run: async ({ args, flags, globals, io }) => (await import("../commands/verify.js")).runVerify(args[0], flags, globals, io),
});

export const listen = command({
  path: ["listen"],
  summary: "run a local receiver that verifies, prints and captures events",
  description: "Run a local receiver that verifies X-Signature (or Standard Webhooks), prints each event and can capture them to NDJSON.",
  flags: listenFlags,
  help: examples(
    "wh listen --port 4000 --secret-file secret.txt --out captured.ndjson",
    "wh listen --scheme standard --secret-file whsec.txt --tolerance 10m   # Standard Webhooks",
    "wh listen --status 503   # watch wh retry",
    "wh listen --secret-file secret.txt --forward-to http://localhost:3000/webhooks --ui",
    "wh listen --ui --out captured.ndjson   # the page starts with what captured.ndjson holds",
    `wh listen --filter 'type = "track" and event = "Order Completed"'   # print and forward only these`,
    `wh listen --route 'type = "identify" => http://localhost:3000/users' --forward-to http://localhost:3000/events`,
  ),
  run: async ({ flags, globals, io }) => (await import("../commands/listen.js")).runListen(flags, globals, io),
});

const config = command({
  path: ["config"],
  summary: "show or validate the configuration",
  description: "Show or validate the configuration.",
  help: CONFIG_HELP,
});
const configShow = command({
  path: ["config", "show"],
  summary: "print the settings in effect",
  description: "Print the settings in effect (secrets masked).",
  flags: configShowFlags,
  help: examples("wh config show", "wh config show --source web --json", "wh config show --url https://example.com/hook --header 'Authorization: Bearer x'"),
  run: async ({ flags, globals, io }) => (await import("../commands/config.js")).runConfigShow(flags, globals, io),
});
const configValidate = command({
  path: ["config", "validate"],
  summary: "check the config file",
  description: "Check the config file; exit 2 with every problem when it is invalid.",
  flags: configValidateFlags,
  help: examples("wh config validate", "wh config validate --config ci/.whrc.json && echo ok"),
  run: async ({ flags, globals, io }) => (await import("../commands/config.js")).runConfigValidate(flags, globals, io),
});
export const configCommands = [config, configShow, configValidate];

export const demo = command({
  path: ["demo"],
  summary: "deliver the sample events to an in-process receiver",
  description: "Deliver the sample events, signed, to an in-process receiver and show them verified.",
  help: examples("wh demo", "npm start   # the same"),
  run: async ({ globals, io }) => (await import("../commands/demo.js")).runDemo(globals, io),
});

export const completion = command({
  path: ["completion"],
  summary: "print a shell completion script",
  description: "Print a shell completion script (commands, flags, and source names from the config).",
  args: [{ syntax: "[shell]", description: "bash, zsh or fish", complete: ["bash", "zsh", "fish"] }],
  flags: completionFlags,
  help: examples(
    'eval "$(wh completion bash)"        # in ~/.bashrc',
    'eval "$(wh completion zsh)"         # in ~/.zshrc',
    "wh completion fish > ~/.config/fish/completions/wh.fish",
  ),
  run: async ({ args, flags, io }) => (await import("../wiring/completion.js")).runCompletion(args[0], flags, io),
});
