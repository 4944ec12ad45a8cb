import { Command } from "commander";
import { VERSION } from "../version.js";
import type { CliIo, GlobalFlags } from "./io.js";

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

const RETRY_HELP = `
Delivery:
  One POST per message to every URL at once; delivered when any URL answers 2xx
  within the timeout (5s, whole response; 10s in actions mode), and then not
  retried to the others. Retried: timeouts, connection errors, 408, 429 and 5xx
  except 501/505 (actions mode, as Segment's Actions destinations: 408, 423, 429
  and 5xx except 501). Final: other 4xx, 3xx (redirects are not followed), 501,
  505 (classic), untrusted TLS.
  Schedule: attempt n waits a random time in [0, min(10m, 1s x 2^(n-1))) (full
  jitter), or exactly what Retry-After asks; no attempt starts after the retry
  window (4h) has closed.`;

function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join("\n")}\n`;
}

function addDeliveryOptions(command: Command): Command {
  return command
    .option("--url <url>", "webhook URL (repeatable, at most 5); replaces the config's URLs", collect)
    .option("--header <header>", "static header 'Name: value' for every URL (repeatable)", collect)
    .option("--secret-file <file>", "read the shared secret from FILE")
    .option("--secret <secret>", "shared secret (visible in the process list: prefer --secret-file or WH_SHARED_SECRET)")
    .option("--ca <file>", "also trust the CA certificates in this PEM file (repeatable)", collect)
    .option("--timeout <duration>", "time allowed for the whole response (default 5s; 10s in actions mode, as Segment's Actions destinations)")
    .option("--retry-window <duration>", "stop retrying this long after the first attempt", "4h")
    .option("--max-attempts <n>", "stop retrying a URL after N attempts, the first included (default: no limit, the window decides)")
    .option("--source <name>", "the config source to deliver for")
    .option("--mode <mode>", "classic: the seed's shapes (default); actions: Segment's Webhooks (Actions) destination, whole events")
    .option("--method <method>", "actions mode: POST (default), PUT or PATCH")
    .option("--batch-size <n>", "actions mode: events per request as a JSON array, 1 to 4000 (default 1: no batches)")
    .option("--verbose", "show every attempt: request headers (secrets masked), status, time and the start of the answer")
    .option("--config <file>", "config file (default: search for .whrc*, wh.config.*, package.json#wh)");
}

function addSecretOptions(command: Command): Command {
  return command
    .option("--secret-file <file>", "read the shared secret from FILE")
    .option("--secret <secret>", "shared secret (visible in the process list: prefer --secret-file or WH_SHARED_SECRET)")
    .option("--config <file>", "config file whose sharedSecret to use when no other is given")
    .option("--source <name>", "with a config of several sources: the source whose sharedSecret to use");
}

/** The options the user gave (not commander's defaults): what a resume command must repeat. */
function givenOptions(command: Command): Record<string, unknown> {
  const opts = command.opts();
  return Object.fromEntries(Object.entries(opts).filter(([key]) => command.getOptionValueSource(key) !== "default"));
}

/** The one command registry. Each action loads its module only when it runs. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Command("wh")
    .description("Send, replay and verify signed webhook events, the way the Segment Webhooks destination delivers them.")
    .version(VERSION, "-V, --version")
    .option("--json", "machine-readable results on stdout, one JSON object per line")
    .option("-q, --quiet", "no progress or log lines on stderr")
    .option("--no-color", "no colours (NO_COLOR works too)")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) });
  const globals = (): GlobalFlags => program.opts<GlobalFlags>();

  // Only the command being run is defined (commander builds every option of every command it is
  // given, a start-up cost `wh sign` in a loop pays each time); help, completion and a name
  // that matches nothing see them all.
  const definitions: Array<[name: string, define: () => void]> = [];
  definitions.push(["send", () => {
    addDeliveryOptions(
      program
        .command("send")
        .summary("build, sign and deliver one message")
        .description("Build one message from flags or --data, validate it, sign it and deliver it to the webhook URLs.")
        .argument("<type>", "identify, track, page, screen, group, alias or delete")
        .option("--user-id <id>", "userId")
        .option("--anonymous-id <id>", "anonymousId")
        .option("--event <name>", "track: the event name")
        .option("--name <name>", "page/screen: the name")
        .option("--category <category>", "page: the category")
        .option("--group-id <id>", "group: the groupId")
        .option("--previous-id <id>", "alias: the previous identity")
        .option("--message-id <id>", "messageId (default: a new UUID)")
        .option("--timestamp <iso8601>", "when it happened (default: now); converted to UTC")
        .option("--prop <key=value>", "a property; dotted keys nest, JSON values are parsed (repeatable)", collect)
        .option("--trait <key=value>", "a trait, like --prop (repeatable)", collect)
        .option("--context <key=value>", "a context field, like --prop (repeatable)", collect)
        .option("--integrations <json>", `integrations object, e.g. '{"All":false,"Webhooks":true}'`)
        .option("--data <json|@file|->", "the message as JSON (flags override its fields)")
        .option("--dry-run", "print the exact request that would be sent, and send nothing"),
    )
      .addHelpText(
        "after",
        `${RETRY_HELP}\n${examples(
          'wh send track --event "Order Completed" --user-id u1 --prop total=99.5 --url https://example.com/hook',
          "wh send identify --user-id u1 --trait plan=pro --trait address.city=Paris",
          "wh send alias --user-id u1 --previous-id anon-42",
          "wh send delete --user-id u1                 # to every enabled source",
          "wh send page --data @page.json --json",
        )}`,
      )
      .action(async (type: string, _flags, command: Command) => {
        const { runSend } = await import("./commands/send.js");
        exitCode = await runSend(type, command.opts(), globals(), io);
      });
  }]);

  definitions.push(["replay", () => {
    addDeliveryOptions(
      program
        .command("replay")
        .summary("deliver every event of an NDJSON file")
        .description(
          "Stream an NDJSON file (or standard input) through the delivery engine: each line validated, signed and delivered, each user's events in file order, failures and invalid lines written to a dead-letter file, resumable after a crash or Ctrl-C.",
        )
        .argument("<file>", "NDJSON file of Segment-spec or outbound messages; - for standard input")
        .option("--concurrency <n>", "deliveries in flight at once", "32")
        .option("--ordered <mode>", "user: each user's events in file order; none: no ordering, fastest", "user")
        .option("--rate <n>", "start at most N events per second")
        .option("--dead-letter <file>", "where invalid lines and failed events go (default: <file>.failed.ndjson, wh-failed.ndjson for stdin)")
        .option("--journal <file>", "where finished lines are recorded (default: <file>.wh-journal, wh-stdin.wh-journal for stdin)")
        .option("--resume", "continue from the journal: send nothing it records as finished")
        .option("--shard <i/n>", "deliver only the lines whose user hashes to shard i of n (0-based): n processes together deliver every line once")
        .option("--exact-bytes", "send lines already in the outbound shape as their own bytes (default: re-serialised compactly, as Segment sends)")
        .option("--dry-run", "print the exact request for every event, and send nothing"),
    )
      .addHelpText(
        "after",
        `${RETRY_HELP}

  Every line ends as delivered, skipped (integrations), invalid or failed; invalid and failed lines
  go to the dead-letter file with their line number and reason. Exit 0 when all were delivered or
  skipped, 1 when any was invalid or failed, 130 after Ctrl-C (the journal is kept: use --resume).
  ${examples(
    "wh replay events.ndjson --url https://example.com/hook --secret-file secret.txt",
    "wh replay events.ndjson --resume              # after a crash or Ctrl-C",
    "zcat big.ndjson.gz | wh replay - --concurrency 64 --json > results.ndjson",
    "wh replay captured.ndjson --dry-run | less",
    "wh replay events.ndjson --shard \"$JOB_COMPLETION_INDEX/4\"   # one of 4 machines",
  )}`,
      )
      .action(async (file: string, _flags, command: Command) => {
        const { runReplay } = await import("./commands/replay.js");
        exitCode = await runReplay(file, command.opts(), globals(), io, givenOptions(command));
      });
  }]);

  definitions.push(["ingest", () => {
    program
      .command("ingest")
      .summary("send NDJSON messages to an ingestion API in batches")
      .description(
        "Send Segment-spec messages from an NDJSON file (or standard input) to a Segment-compatible ingestion API with the batching client: POST {endpoint}/v1/batch, write key as the basic-auth user.",
      )
      .argument("<file>", "NDJSON file of identify/track/page/screen/group/alias messages; - for standard input")
      .option("--write-key <key>", "the source's write key (WH_WRITE_KEY, or ingest.writeKey in the config)")
      .option("--endpoint <url>", "base URL of the ingestion API (WH_ENDPOINT, or ingest.endpoint in the config)")
      .option("--flush-at <n>", "send a batch every N messages", "20")
      .option("--flush-after <duration>", "send a batch this long after the last one", "5s")
      .option("--source <name>", "use this config source's writeKey")
      .option("--config <file>", "config file (default: search)")
      .option("--dead-letter <file>", "where invalid lines and the messages of failed batches go (default: <file>.ingest-failed.ndjson, wh-ingest-failed.ndjson for stdin)")
      .option("--journal <file>", "where finished lines are recorded (default: <file>.wh-ingest-journal, wh-stdin.wh-ingest-journal for stdin)")
      .option("--resume", "continue from the journal: send nothing it records as finished")
      .addHelpText(
        "after",
        `
  Batches never pass 500 KB; a message over 32 KB, or one that breaks the rules, is reported as
  "line N: reason", skipped, and makes the exit code 1. A batch is retried on 5xx, 429 and network
  errors (10 attempts at most); other 4xx are final. The messages of a failed batch and invalid lines
  go to the dead-letter file with their line numbers; Ctrl-C stops within 5 s, even while batches
  wait to retry, and --resume goes on. DEBUG=analytics logs every step on stderr.
  ${examples("WH_WRITE_KEY=wk_123 wh ingest events.ndjson --endpoint https://ingest.example.com", "cat events.ndjson | wh ingest - --flush-at 100 --json")}`,
      )
      .action(async (file: string, _flags, command: Command) => {
        const { runIngest } = await import("./commands/ingest.js");
        exitCode = await runIngest(file, command.opts(), globals(), io, givenOptions(command));
      });
  }]);

  definitions.push(["sign", () => {
    addSecretOptions(program.command("sign").description("Print the X-Signature (hex HMAC-SHA1) of a body's exact bytes.").argument("[file]", "the body; standard input when omitted or -"))
      .addHelpText("after", examples("wh sign --secret-file secret.txt body.json", "printf '%s' \"$BODY\" | WH_SHARED_SECRET=s3cret wh sign"))
      .action(async (file: string | undefined, _flags, command: Command) => {
        const { runSign } = await import("./commands/sign.js");
        exitCode = await runSign(file, command.opts(), globals(), io);
      });
  }]);

  definitions.push(["verify", () => {
    addSecretOptions(
      program
        .command("verify")
        .description("Check a body's X-Signature. Exit 0 when it matches, 1 when it does not (or is malformed), 2 on bad usage.")
        .argument("[file]", "the body; standard input when omitted or -"),
    )
      .option("--signature <hex>", "the X-Signature value to check")
      .option("--explain", "on a mismatch, say what most likely went wrong")
      .option("--capture <file>", "check every request of a wh listen --out capture against its own X-Signature, as a table")
      .addHelpText(
        "after",
        examples(
          "cat body.json | wh verify --secret-file secret.txt --signature 8b3e…",
          "wh verify --signature \"$SIG\" --explain body.json   # secret from WH_SHARED_SECRET",
          "wh verify --capture captured.ndjson --secret-file secret.txt",
        ),
      )
      .action(async (file: string | undefined, _flags, command: Command) => {
        const { runVerify } = await import("./commands/verify.js");
        exitCode = await runVerify(file, command.opts(), globals(), io);
      });
  }]);

  definitions.push(["listen", () => {
    program
      .command("listen")
      .description("Run a local receiver that verifies X-Signature, prints each event and can capture them to NDJSON.")
      .option("--port <port>", "port to listen on (default: a free port, printed at start)")
      .option("--host <host>", "address to listen on", "127.0.0.1")
      .option("--secret-file <file>", "check X-Signature with the secret in FILE")
      .option("--secret <secret>", "check X-Signature with this secret (WH_SHARED_SECRET works too)")
      .option("--status <code>", "status to answer accepted requests with", "200")
      .option("--out <file.ndjson>", "append every accepted request to this NDJSON file as {receivedAt, method, path, headers, body} (wh replay sends them again, wh verify --capture checks them)")
      .option("--forward-to <url>", "send each request that passes verification on to your app, exact bytes and headers; the app's answer is the answer")
      .option("--ui", "serve a live inspector page (its URL is printed): each request's headers, body, verdict and answer; resend, copy as curl")
      .addHelpText(
        "after",
        examples(
          "wh listen --port 4000 --secret-file secret.txt --out captured.ndjson",
          "wh listen --status 503   # watch wh retry",
          "wh listen --secret-file secret.txt --forward-to http://localhost:3000/webhooks --ui",
        ),
      )
      .action(async (_flags, command: Command) => {
        const { runListen } = await import("./commands/listen.js");
        exitCode = await runListen(command.opts(), globals(), io);
      });
  }]);

  definitions.push(["serve", () => {
    const serve = addDeliveryOptions(
      program
        .command("serve")
        .summary("a local Segment-compatible tracking API that forwards to your webhooks")
        .description(
          "Answer Segment's tracking API (POST /v1/track, /v1/batch, …, the short paths analytics.js uses) so a real Segment SDK can send to wh; each accepted event is on disk before the answer, then delivered to the webhooks as the destination does. With no webhooks configured, delivers to an embedded receiver and shows each event arrive verified.",
        )
        .option("--port <port>", "port of the tracking API (0: any free port)", String(8787))
        .option("--host <host>", "address to listen on", "127.0.0.1")
        .option("--data-dir <dir>", "where accepted events are spooled until delivered, and the dead letters", ".wh/serve")
        .option("--max-body <size>", "largest request body, after gzip (analytics-node sends batches up to about 1 MB: raise this for it)", "500kb")
        .option("--max-spool <size>", "answer 503 with Retry-After once the spool holds this much", "1gb")
        .option("--concurrency <n>", "deliveries in flight at once, per source", "32")
        .option("--dedup-window <n>", "drop an event whose messageId is among the last N accepted for its source", "100000")
        .option("--ui", "serve a live inspector page (its URL is printed): each accepted event with its deliveries; resend, copy as curl")
        .option("--queue <url>", "keep accepted events in Redis Streams (redis://[user:password@]host:port[/db]) instead of the spool")
        .option("--partitions <n>", "with --queue: partitions of a new queue (default 64; fixed for the life of the queue)")
        .option("--role <role>", "with --queue: accept, forward, or both (default)")
        .option("--dead-letter <file>", "with --queue: dead letters to this file too (they always go to the queue's dead-letter stream)"),
    )
      .addHelpText(
        "after",
        `${RETRY_HELP}

Write keys: with sources in the config, each source's writeKey selects its webhooks, secret and
mode, and an unknown key is answered 401; with flat settings any key is accepted. An accepted
request is answered {"success": true} only once its events are written and synced to the spool;
a full spool or disk is answered 503 with Retry-After, which Segment's SDKs retry. GET /health
and GET /metrics (Prometheus) tell how it goes. Ctrl-C stops accepting, lets deliveries in flight
finish for up to 5 s, and keeps the rest in the spool for the next start.
${examples("wh serve                                   # embedded receiver: watch events arrive verified", "wh serve --url https://example.com/hook --secret-file secret.txt", "wh serve --config .whrc.json --port 8787 --data-dir /var/lib/wh --json")}`,
      )
      .action(async (_flags, command: Command) => {
        const { runServe } = await import("./commands/serve.js");
        exitCode = await runServe(command.opts(), globals(), io);
      });
    const deadLetters = serve
      .command("dead-letters")
      .description("List the dead letters of a Redis queue, or put them back to be delivered again.")
      .addHelpText("after", examples("wh serve dead-letters list --queue redis://127.0.0.1:6379/0", "wh serve dead-letters replay --queue redis://127.0.0.1:6379/0"));
    deadLetters
      .command("list")
      .description("Every dead letter of the queue, oldest first: id, time, event, why it failed.")
      .option("--queue <url>", "the Redis queue (default: queue in the config)")
      .option("--config <file>", "config file (default: search)")
      .addHelpText("after", examples("wh serve dead-letters list --queue redis://127.0.0.1:6379/0", "wh --json serve dead-letters list > dead-letters.ndjson   # queue from the config"))
      .action(async (_flags, command: Command) => {
        const { runDeadLettersList } = await import("./commands/serve-dead-letters.js");
        // --queue and --config are also serve's own options: commander gives them to serve.
        exitCode = await runDeadLettersList(command.optsWithGlobals(), globals(), io);
      });
    deadLetters
      .command("replay")
      .description("Put dead letters back into their partitions; the forwarders deliver them again.")
      .option("--queue <url>", "the Redis queue (default: queue in the config)")
      .option("--config <file>", "config file (default: search)")
      .option("--id <id>", "only this dead letter (repeatable; default: all)", collect)
      .addHelpText("after", examples("wh serve dead-letters replay --queue redis://127.0.0.1:6379/0", "wh serve dead-letters replay --id 1732262400000-0 --id 1732262400001-0"))
      .action(async (_flags, command: Command) => {
        const { runDeadLettersReplay } = await import("./commands/serve-dead-letters.js");
        exitCode = await runDeadLettersReplay(command.optsWithGlobals(), globals(), io);
      });
  }]);
  const syncHelp = (what: string, example: string): string => `
The trait name is the snake_case form of NAME: lower case, every run of characters other than
letters and digits becomes one "_" (High-Value Users (EU) -> high_value_users_eu). ${what}
The state file (default <trait>.wh-state.json) records what was delivered, and only that: a
failed or interrupted sync sends the same changes again next time. It is written atomically.
${examples(example)}`;
  const addSyncOptions = (command: Command): Command =>
    addDeliveryOptions(
      command
        .option("--state <file>", "what was delivered so far (default: <trait>.wh-state.json)")
        .option("--concurrency <n>", "deliveries in flight at once", "32")
        .option("--rate <n>", "start at most N identifies per second")
        .option("--dry-run", "print the exact request for every change, send nothing, keep the state"),
    );
  const syncs = [
    {
      group: "audience",
      summary: "Send audience memberships as identify traits.",
      description: "Send an identify { <trait>: true } for each member who joined and { <trait>: false } for each who left.",
      subject: "the audience's name",
      input: ["--members <file>", "the members: one userId per line, NDJSON with userId, or CSV with a userId column"],
      what: "The first sync sends true for every member; later syncs only the changes.",
      example: 'wh audience sync "High-Value Users (EU)" --members members.csv --state hvu.json',
      run: "runAudienceSync",
    },
    {
      group: "traits",
      summary: "Send computed traits as identify traits.",
      description: "Send an identify { <trait>: value } for each user whose value changed since the last delivered sync.",
      subject: "the computed trait's name",
      input: ["--values <file>", "userId to value: CSV userId,value (header optional) or NDJSON {userId, value}"],
      what: "Users missing from the values file are left as they are.",
      example: 'wh traits sync "Lifetime Value" --values ltv.csv',
      run: "runTraitsSync",
    },
  ] as const;
  for (const sync of syncs) {
    definitions.push([
      sync.group,
      () =>
        addSyncOptions(
          program.command(sync.group).description(sync.summary).addHelpText("after", examples(sync.example)).command("sync").description(sync.description).argument("<name>", sync.subject).requiredOption(sync.input[0], sync.input[1]),
        )
          .addHelpText("after", syncHelp(sync.what, sync.example))
          .action(async (name: string, _flags, command: Command) => {
            const commands = await import("./commands/sync.js");
            exitCode = await commands[sync.run](name, command.opts(), globals(), io);
          }),
    ]);
  }

  definitions.push(["config", () => {
    const config = program
      .command("config")
      .description("Show or validate the configuration.")
      .addHelpText(
        "after",
        `
  Config files (cosmiconfig, module "wh"): .whrc, .whrc.json, .whrc.yaml, .whrc.yml,
  wh.config.js/.mjs/.cjs, or the "wh" key of package.json, searched from the current
  directory up to the project root. Flags override WH_SHARED_SECRET, which overrides the file.
  ${examples("wh config show", "wh config validate --config ./ci/.whrc.json")}`,
      );
    addDeliveryOptions(config.command("show").description("Print the settings in effect (secrets masked)."))
      .addHelpText("after", examples("wh config show", "wh config show --source web --json", "wh config show --url https://example.com/hook --header 'Authorization: Bearer x'"))
      .action(async (_flags, command: Command) => {
        const { runConfigShow } = await import("./commands/config.js");
        exitCode = await runConfigShow(command.opts(), globals(), io);
      });
    config
      .command("validate")
      .description("Check the config file; exit 2 with every problem when it is invalid.")
      .option("--config <file>", "the config file to check (default: search)")
      .addHelpText("after", examples("wh config validate", "wh config validate --config ci/.whrc.json && echo ok"))
      .action(async (_flags, command: Command) => {
        const { runConfigValidate } = await import("./commands/config.js");
        exitCode = await runConfigValidate(command.opts(), globals(), io);
      });
  }]);

  definitions.push(["demo", () => {
    program
      .command("demo")
      .description("Deliver the sample events, signed, to an in-process receiver and show them verified.")
      .addHelpText("after", examples("wh demo", "npm start   # the same"))
      .action(async () => {
        const { runDemo } = await import("./commands/demo.js");
        exitCode = await runDemo(globals(), io);
      });
  }]);

  definitions.push(["completion", () => {
    program
      .command("completion")
      .description("Print a shell completion script (commands, flags, and source names from the config).")
      .argument("[shell]", "bash, zsh or fish")
      .option("--sources", "print the config's source names, one per line (what the scripts call)")
      .addHelpText("after", examples('eval "$(wh completion bash)"        # in ~/.bashrc', 'eval "$(wh completion zsh)"         # in ~/.zshrc', "wh completion fish > ~/.config/fish/completions/wh.fish"))
      .action(async (shell: string | undefined, flags: { sources?: boolean }) => {
        if (flags.sources === true) {
          const { loadConfig } = await import("../config/load.js");
          const { config } = await loadConfig(io.cwd).catch(() => ({ config: {} as { sources?: Record<string, unknown> } }));
          for (const name of Object.keys(config.sources ?? {})) io.stdout.write(`${name}\n`);
          return;
        }
        const { completionScript } = await import("./completion.js");
        io.stdout.write(completionScript(shell ?? "", program));
      });
  }]);

  const named = argv.find((arg) => !arg.startsWith("-"));
  const only = named === "completion" ? undefined : definitions.find(([name]) => name === named);
  for (const [, define] of only === undefined ? definitions : [only]) define();

  program.addHelpText(
    "after",
    `
Exit codes: 0 all delivered (or signature valid); 1 an event failed or was invalid, or a
signature did not match; 2 bad usage or configuration; 70 internal error; 130 interrupted.
${examples('wh send track --event "Order Completed" --user-id u1 --url http://127.0.0.1:4000/', "wh listen --port 4000 --secret-file secret.txt", "cat body.json | wh verify --secret-file secret.txt --signature \"$SIG\"")}`,
  );
  await program.parseAsync(argv, { from: "user" });
  return exitCode;
}

