import { MESSAGE_TYPES } from "../../core/message/types.js";
import { deadLettersListFlags, deadLettersReplayFlags, serveFlags } from "../flags/server-tables.js";
import { audienceSyncFlags, ingestFlags, replayFlags, sendFlags, traitsSyncFlags } from "../flags/tables.js";
import { command, examples } from "./command-spec.js";
import { INGEST_HELP, REPLAY_HELP, SEND_HELP, SERVE_HELP, syncHelp } from "./help.js";

/** The commands that deliver: send, replay, ingest, serve (and its dead letters), the syncs. */

export const send = command({
  path: ["send"],
  summary: "build, sign and deliver one message",
  description: "Build one message from flags or --data, validate it, sign it and deliver it to the webhook URLs.",
  args: [{ syntax: "[type]", description: "identify, track, page, screen, group, alias or delete (with --sample: the sample's)", complete: MESSAGE_TYPES }],
  flags: sendFlags,
  help: `${SEND_HELP}\n${examples(
    'wh send track --event "Order Completed" --user-id u1 --prop total=99.5 --url https://example.com/hook',
    "wh send identify --user-id u1 --trait plan=pro --trait address.city=Paris",
    "wh send alias --user-id u1 --previous-id anon-42",
    "wh send delete --user-id u1                 # to every enabled source",
    "wh send page --data @page.json --json",
    'wh send --sample "Order Completed" --prop total=42 --user-id u1   # from the catalogue: wh samples',
    "wh send track --event Signed-Up --user-id u1 --scheme standard --secret-file whsec.txt   # Standard Webhooks",
  )}`,
  run: async ({ args, flags, globals, io }) => (await import("../commands/send.js")).runSend(args[0], flags, globals, io),
});

export const replay = command({
  path: ["replay"],
  summary: "deliver every event of an NDJSON file",
  description:
    "Stream an NDJSON file (or standard input) through the delivery engine: each line validated, signed and delivered, each user's events in file order, failures and invalid lines written to a dead-letter file, resumable after a crash or Ctrl-C.",
  args: [{ syntax: "<file>", description: "NDJSON file of Segment-spec or outbound messages; - for standard input" }],
  flags: replayFlags,
  help: REPLAY_HELP,
  run: async ({ args, flags, globals, io, given }) => (await import("../commands/replay.js")).runReplay(args[0] ?? "", flags, globals, io, given),
});

export const ingest = command({
  path: ["ingest"],
  summary: "send NDJSON messages to an ingestion API in batches",
  description:
    "Send Segment-spec messages from an NDJSON file (or standard input) to a Segment-compatible ingestion API with the batching client: POST {endpoint}/v1/batch, write key as the basic-auth user.",
  args: [{ syntax: "<file>", description: "NDJSON file of identify/track/page/screen/group/alias messages; - for standard input" }],
  flags: ingestFlags,
  help: INGEST_HELP,
  run: async ({ args, flags, globals, io, given }) => (await import("../commands/ingest.js")).runIngest(args[0] ?? "", flags, globals, io, given),
});

const serve = command({
  path: ["serve"],
  summary: "run a Segment-compatible tracking API that forwards to your webhooks",
  description:
    "Answer Segment's tracking API (POST /v1/track, /v1/batch, …, the short paths analytics.js uses) so a real Segment SDK can send to wh; each accepted event is on disk before the answer, then delivered to the webhooks as the destination does. With no webhooks configured, delivers to an embedded receiver and shows each event arrive verified.",
  flags: serveFlags,
  help: SERVE_HELP,
  run: async ({ flags, globals, io }) => (await import("../commands/serve.js")).runServe(flags, globals, io),
});

const deadLetters = command({
  path: ["serve", "dead-letters"],
  summary: "list or put back the dead letters of wh serve",
  description: "List the dead letters of the spool (--data-dir) or of a Redis queue (--queue), or put them back to be delivered again.",
  help: examples(
    "wh serve dead-letters list                                # the spool in .wh/serve",
    "wh serve dead-letters replay --data-dir /var/lib/wh",
    "wh serve dead-letters list --queue redis://127.0.0.1:6379/0",
  ),
});

const deadLettersList = command({
  path: ["serve", "dead-letters", "list"],
  summary: "list the dead letters, oldest first",
  description: "Every dead letter of the spool or the queue, oldest first: id, time, event, why it failed.",
  flags: deadLettersListFlags,
  help: examples(
    "wh serve dead-letters list --queue redis://127.0.0.1:6379/0",
    "wh --json serve dead-letters list > dead-letters.ndjson   # queue from the config",
  ),
  run: async ({ flags, globals, io }) => (await import("../commands/serve-dead-letters.js")).runDeadLettersList(flags, globals, io),
});

const deadLettersReplay = command({
  path: ["serve", "dead-letters", "replay"],
  summary: "put dead letters back to be delivered again",
  description:
    "Put dead letters back to be delivered again, each once: into the spool, for the next wh serve on it (stop a running one first: it holds the spool), or into their Redis partitions, for the forwarders.",
  flags: deadLettersReplayFlags,
  help: examples(
    "wh serve dead-letters replay --data-dir .wh/serve --id 3f2a9c0d1e4b5a68",
    "wh serve dead-letters replay --queue redis://127.0.0.1:6379/0",
    "wh serve dead-letters replay --id 1732262400000-0 --id 1732262400001-0",
  ),
  run: async ({ flags, globals, io }) => (await import("../commands/serve-dead-letters.js")).runDeadLettersReplay(flags, globals, io),
});

const AUDIENCE_EXAMPLE = 'wh audience sync "High-Value Users (EU)" --members members.csv --state hvu.json';
const TRAITS_EXAMPLE = 'wh traits sync "Lifetime Value" --values ltv.csv';

const audience = command({
  path: ["audience"],
  summary: "send audience memberships as identify traits",
  description: "Send audience memberships as identify traits.",
  help: examples(AUDIENCE_EXAMPLE),
});
const audienceSync = command({
  path: ["audience", "sync"],
  summary: "send the members who joined and left since the last sync",
  description: "Send an identify { <trait>: true } for each member who joined and { <trait>: false } for each who left.",
  args: [{ syntax: "<name>", description: "the audience's name" }],
  flags: audienceSyncFlags,
  required: ["members"],
  help: syncHelp("The first sync sends true for every member; later syncs only the changes.", AUDIENCE_EXAMPLE),
  run: async ({ args, flags, globals, io }) => (await import("../commands/sync.js")).runAudienceSync(args[0] ?? "", flags, globals, io),
});

const traits = command({
  path: ["traits"],
  summary: "send computed traits as identify traits",
  description: "Send computed traits as identify traits.",
  help: examples(TRAITS_EXAMPLE),
});
const traitsSync = command({
  path: ["traits", "sync"],
  summary: "send the values that changed since the last sync",
  description: "Send an identify { <trait>: value } for each user whose value changed since the last delivered sync.",
  args: [{ syntax: "<name>", description: "the computed trait's name" }],
  flags: traitsSyncFlags,
  required: ["values"],
  help: syncHelp("Users missing from the values file are left as they are.", TRAITS_EXAMPLE),
  run: async ({ args, flags, globals, io }) => (await import("../commands/sync.js")).runTraitsSync(args[0] ?? "", flags, globals, io),
});

export const serveCommands = [serve, deadLetters, deadLettersList, deadLettersReplay];
export const syncCommands = [audience, audienceSync, traits, traitsSync];
