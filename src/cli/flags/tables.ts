import { MAX_ACTIONS_BATCH_SIZE } from "../../core/batch.js";
import { SIGNING_SCHEMES } from "../../core/standard-webhooks.js";
import { duration, host, oneOf, rate, wholeNumber } from "./parsers.js";
import { replayShard, replayWorkers } from "./replay-split-tables.js";
import { sendSample } from "./samples-tables.js";
import { flag, flagTable } from "./spec.js";

/**
 * Every flag of every command, declared once (see spec.ts). The tables are plain data: defining
 * them costs nothing at start-up; commander's options are built only for the command being run.
 */

export const globalFlags = flagTable({
  json: flag({ syntax: "--json", description: "machine-readable results on stdout, one JSON object per line" }),
  quiet: flag({ syntax: "-q, --quiet", description: "no progress or log lines on stderr" }),
  color: flag({ syntax: "--no-color", description: "no colours (NO_COLOR works too)" }),
});

const secretFile = flag({ syntax: "--secret-file <file>", description: "read the shared secret from FILE", resume: true, complete: "file" });
const secret = flag({
  syntax: "--secret <secret>",
  description: "shared secret (visible in the process list: prefer --secret-file or WH_SHARED_SECRET)",
  config: "sharedSecret",
});
const config = flag({
  syntax: "--config <file>",
  description: "config file (default: search for .whrc*, wh.config.*, package.json#wh)",
  resume: true,
  complete: "file",
});
const source = flag({ syntax: "--source <name>", description: "the config source to deliver for", resume: true, complete: "sources" });
export const concurrency = flag({
  syntax: "--concurrency <n>",
  description: "deliveries in flight at once",
  default: "32",
  parse: wholeNumber(1, 10_000),
  resume: true,
});
const eventRate = flag({ syntax: "--rate <n>", description: "start at most N events per second", parse: rate, resume: true });
const deadLetter = { syntax: "--dead-letter <file>", resume: true, complete: "file" } as const;
const journal = { syntax: "--journal <file>", resume: true, complete: "file" } as const;
const resume = flag({ syntax: "--resume", description: "continue from the journal: send nothing it records as finished" });
const verbose = flag({
  syntax: "--verbose",
  description: "show every attempt: request headers (secrets masked), status, time and the start of the answer",
  resume: true,
});
const maxFailures = flag({
  syntax: "--max-failures <n>",
  description: "stop after N identical final failures (same URLs, same status or error), or N lines invalid the same way, in a row; 0: never",
  default: "100",
  parse: wholeNumber(0, 1_000_000_000),
  resume: true,
});
const dryRun = (what: string) => flag({ syntax: "--dry-run", description: what });
export const listenHost = flag({ syntax: "--host <host>", description: "address to listen on", default: "127.0.0.1", parse: host });

/** How the secret signs; a command that signs or checks one body takes it as a flag only. */
export const bodyScheme = flag({
  syntax: "--scheme <scheme>",
  description: "how the secret signs: segment (X-Signature, default) or standard (Standard Webhooks: webhook-id, -timestamp, -signature; a whsec_ secret)",
  parse: oneOf(SIGNING_SCHEMES),
  complete: SIGNING_SCHEMES,
});
/** The destination's scheme, `scheme` in the config. */
export const scheme = flag({ ...bodyScheme, resume: true, config: "scheme" });

export const deliveryFlags = flagTable({
  url: flag({ syntax: "--url <url>", description: "webhook URL (repeatable, at most 5); replaces the config's URLs", repeatable: true, resume: "url" }),
  header: flag({ syntax: "--header <header>", description: "static header 'Name: value' for every URL (repeatable)", repeatable: true, resume: "header" }),
  secretFile,
  secret,
  ca: flag({
    syntax: "--ca <file>",
    description: "also trust the CA certificates in this PEM file (repeatable)",
    repeatable: true,
    resume: true,
    complete: "file",
  }),
  timeout: flag({
    syntax: "--timeout <duration>",
    description: "time allowed for the whole response (default 5s; 10s in actions mode, as Segment's Actions destinations)",
    parse: duration({ positive: true }),
    resume: true,
  }),
  retryWindow: flag({
    syntax: "--retry-window <duration>",
    description: "retry until this long after the first attempt, the last attempt then",
    default: "4h",
    parse: duration(),
    resume: true,
  }),
  maxAttempts: flag({
    syntax: "--max-attempts <n>",
    description: "stop retrying a URL after N attempts, the first included (default: no limit, the window decides)",
    parse: wholeNumber(1, 1_000_000),
    resume: true,
  }),
  source,
  mode: flag({
    syntax: "--mode <mode>",
    description: "classic: the seed's shapes (default); actions: Segment's Webhooks (Actions) destination, whole events",
    parse: oneOf(["classic", "actions"]),
    resume: true,
    config: "mode",
    complete: ["classic", "actions"],
  }),
  method: flag({
    syntax: "--method <method>",
    description: "actions mode: POST (default), PUT or PATCH",
    parse: oneOf(["POST", "PUT", "PATCH"], { upperCase: true }),
    resume: true,
    config: "method",
    complete: ["POST", "PUT", "PATCH"],
  }),
  batchSize: flag({
    syntax: "--batch-size <n>",
    description: `actions mode: events per request as a JSON array, 1 to ${MAX_ACTIONS_BATCH_SIZE} (default 1: no batches)`,
    parse: wholeNumber(1, MAX_ACTIONS_BATCH_SIZE),
    resume: true,
    config: "batchSize",
  }),
  scheme,
  verbose,
  config,
});

export const secretFlags = flagTable({
  secretFile,
  secret,
  config: flag({ syntax: "--config <file>", description: "config file whose sharedSecret to use when no other is given", complete: "file" }),
  source: flag({ syntax: "--source <name>", description: "with a config of several sources: the source whose sharedSecret to use", complete: "sources" }),
});

/** Only the commands that deliver to subscriptions take the file (resolveDeliverySettings' takesSubscriptions). */
export const subscriptions = flag({
  syntax: "--subscriptions <file>",
  description: "JSON file of a Webhooks (Actions) destination's subscriptions (Segment's Public API answer, or its array): replaces the config's",
  resume: true,
  complete: "file",
});

export const sendFlags = flagTable({
  ...deliveryFlags,
  subscriptions,
  retryWindow: flag({
    syntax: "--retry-window <duration>",
    description: "retry until this long after the first attempt, the last attempt then (default 4h; 1m when stderr is a terminal: a person is waiting)",
    parse: duration(),
  }),
  userId: flag({ syntax: "--user-id <id>", description: "userId" }),
  anonymousId: flag({ syntax: "--anonymous-id <id>", description: "anonymousId" }),
  event: flag({ syntax: "--event <name>", description: "track: the event name" }),
  name: flag({ syntax: "--name <name>", description: "page/screen: the name" }),
  category: flag({ syntax: "--category <category>", description: "page: the category" }),
  groupId: flag({ syntax: "--group-id <id>", description: "group: the groupId" }),
  previousId: flag({ syntax: "--previous-id <id>", description: "alias: the previous identity" }),
  messageId: flag({ syntax: "--message-id <id>", description: "messageId (default: a new UUID)" }),
  timestamp: flag({ syntax: "--timestamp <iso8601>", description: "when it happened (default: now); converted to UTC" }),
  prop: flag({ syntax: "--prop <key=value>", description: "a property; dotted keys nest, JSON values are parsed (repeatable)", repeatable: true }),
  trait: flag({ syntax: "--trait <key=value>", description: "a trait, like --prop (repeatable)", repeatable: true }),
  context: flag({ syntax: "--context <key=value>", description: "a context field, like --prop (repeatable)", repeatable: true }),
  integrations: flag({ syntax: "--integrations <json>", description: `integrations object, e.g. '{"All":false,"Webhooks":true}'` }),
  data: flag({ syntax: "--data <json|@file|->", description: "the message as JSON (flags override its fields)" }),
  sample: sendSample,
  dryRun: dryRun("print the exact request that would be sent, and send nothing"),
});

export const replayFlags = flagTable({
  ...deliveryFlags,
  subscriptions,
  concurrency,
  ordered: flag({
    syntax: "--ordered <mode>",
    description: "user: each user's events in file order; none: no ordering, fastest",
    default: "user",
    parse: oneOf(["user", "none"]),
    resume: true,
    complete: ["user", "none"],
  }),
  rate: eventRate,
  maxFailures,
  deadLetter: flag({ ...deadLetter, description: "where invalid lines and failed events go (default: <file>.failed.ndjson, wh-failed.ndjson for stdin)" }),
  journal: flag({ ...journal, description: "where finished lines are recorded (default: <file>.wh-journal, wh-stdin.wh-journal for stdin)" }),
  resume,
  shard: replayShard,
  workers: replayWorkers,
  messageId: flag({
    syntax: "--message-id <id>",
    description:
      "send only the events with this messageId (repeatable): one event of a capture or dead-letter file resent; the run keeps a journal and dead letters of its own",
    repeatable: true,
    resume: true,
  }),
  exactBytes: flag({
    syntax: "--exact-bytes",
    description: "send lines already in the outbound shape as their own bytes (default: re-serialised compactly, as Segment sends)",
    resume: true,
  }),
  dryRun: dryRun("print the exact request for every event, and send nothing"),
});

export const ingestFlags = flagTable({
  writeKey: flag({ syntax: "--write-key <key>", description: "the source's write key (WH_WRITE_KEY, or ingest.writeKey in the config)", resume: "secret" }),
  endpoint: flag({ syntax: "--endpoint <url>", description: "base URL of the ingestion API (WH_ENDPOINT, or ingest.endpoint in the config)", resume: "url" }),
  flushAt: flag({ syntax: "--flush-at <n>", description: "send a batch every N messages", default: "20", parse: wholeNumber(1, 100_000), resume: true }),
  flushAfter: flag({
    syntax: "--flush-after <duration>",
    description: "send a batch this long after the last one",
    default: "5s",
    parse: duration(),
    resume: true,
  }),
  source: flag({ syntax: "--source <name>", description: "use this config source's writeKey", resume: true, complete: "sources" }),
  config: flag({ syntax: "--config <file>", description: "config file (default: search)", resume: true, complete: "file" }),
  deadLetter: flag({
    ...deadLetter,
    description: "where invalid lines and the messages of failed batches go (default: <file>.ingest-failed.ndjson, wh-ingest-failed.ndjson for stdin)",
  }),
  journal: flag({ ...journal, description: "where finished lines are recorded (default: <file>.wh-ingest-journal, wh-stdin.wh-ingest-journal for stdin)" }),
  resume,
  maxFailures,
});

const webhookId = (what: string) => flag({ syntax: "--id <id>", description: `scheme standard: the webhook-id ${what}` });
const webhookTimestamp = (what: string) =>
  flag({
    syntax: "--timestamp <seconds>",
    description: `scheme standard: the webhook-timestamp, whole seconds since the epoch ${what}`,
    parse: wholeNumber(0, 1e12),
  });
/** How far a Standard Webhooks timestamp may be from now either way: the reference libraries' 5 minutes. */
export const tolerance = flag({
  syntax: "--tolerance <duration>",
  description: "scheme standard: how far webhook-timestamp may be from now, either way (older: a replay)",
  default: "5m",
  parse: duration(),
});

export const signFlags = flagTable({
  ...secretFlags,
  scheme: bodyScheme,
  id: webhookId("(default: the body's messageId, else msg_ and a hash of the body)"),
  timestamp: webhookTimestamp("(default: now)"),
});

export const verifyFlags = flagTable({
  ...secretFlags,
  signature: flag({ syntax: "--signature <value>", description: "the X-Signature value to check (scheme standard: the webhook-signature header)" }),
  scheme: bodyScheme,
  id: webhookId("received"),
  timestamp: webhookTimestamp("received"),
  tolerance,
  explain: flag({ syntax: "--explain", description: "on an X-Signature mismatch, say what most likely went wrong" }),
  capture: flag({
    syntax: "--capture <file>",
    description: "check every request of a wh listen --out capture against its own signature headers, as a table",
    complete: "file",
  }),
});

const syncFlags = flagTable({
  ...deliveryFlags,
  subscriptions,
  state: flag({ syntax: "--state <file>", description: "what was delivered so far (default: <trait>.wh-state.json)", complete: "file" }),
  concurrency,
  rate: flag({ ...eventRate, description: "start at most N identifies per second" }),
  maxFailures,
  dryRun: dryRun("print the exact request for every change, send nothing, keep the state"),
});

export const audienceSyncFlags = flagTable({
  members: flag({
    syntax: "--members <file>",
    description: "the members: one userId per line, NDJSON with userId, or CSV with a userId column",
    complete: "file",
  }),
  ...syncFlags,
});

export const traitsSyncFlags = flagTable({
  values: flag({ syntax: "--values <file>", description: "userId to value: CSV userId,value (header optional) or NDJSON {userId, value}", complete: "file" }),
  ...syncFlags,
});

export const configShowFlags = deliveryFlags;
export const configValidateFlags = flagTable({
  config: flag({ syntax: "--config <file>", description: "the config file to check (default: search)", complete: "file" }),
});

export const completionFlags = flagTable({
  sources: flag({ syntax: "--sources", description: "print the config's source names, one per line (what the scripts call)" }),
});
