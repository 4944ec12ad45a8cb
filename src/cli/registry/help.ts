import { examples } from "./command-spec.js";

/** How delivery retries, for the help of every delivering command. */
const RETRY_HELP = `
Delivery:
  One POST per message to every URL at once; delivered when any URL answers 2xx
  within the timeout (5s, whole response; 10s in actions mode), and then not
  retried to the others. Retried: timeouts, connection errors, 408, 410, 429,
  460 and 5xx except 501/505 (actions mode, as Segment's Actions destinations:
  408, 423, 429 and 5xx except 501). Final: other 4xx, 3xx (redirects are
  followed only in actions mode, as Segment's are: at most 20), 501, 505
  (classic), untrusted TLS.
  Schedule: attempt n waits a random time in [0, min(10m, 1s x 2^(n-1))) (full
  jitter), or longer when Retry-After (seconds or an HTTP date) asks for longer,
  never less; no attempt starts after the retry window (4h) has closed.
  Retry now: kill -USR1 <pid>, or the r key on a terminal, makes every delivery
  waiting to retry try again at once (the attempt it was waiting for).`;

export const SEND_HELP = `${RETRY_HELP}
  When stderr is a terminal, wh send retries for 1m instead: a person is waiting for
  the answer (a receiver not started, a wrong port). Scripts keep 4h; --retry-window
  sets either.`;

export const PROGRAM_HELP = `
Exit codes: 0 all delivered (or signature valid, or every required check case passed); 1 an
event failed or was invalid, or a signature did not match, or a required check case failed;
2 bad usage or configuration; 70 internal error; 74 a file wh writes failed mid-run (disk
full): resumable; 130 interrupted: resumable; 141 standard output closed (| head): resumable.
${examples('wh send track --event "Order Completed" --user-id u1 --url http://127.0.0.1:4000/', "wh listen --port 4000 --secret-file secret.txt", 'cat body.json | wh verify --secret-file secret.txt --signature "$SIG"')}`;

export const REPLAY_HELP = `${RETRY_HELP}

  Every line ends as delivered, skipped (integrations), invalid or failed; invalid and failed lines
  go to the dead-letter file with their line number and reason. After --max-failures (100)
  identical failures in a row (same URLs, same status or error) the run stops, resumable; so it
  does after as many lines invalid the same way in a row (a key renamed in every line). Exit 0
  when all were delivered or skipped, 1 when any was invalid or failed (or the run stopped so),
  130 after Ctrl-C (the journal is kept: use --resume). Ctrl-C lets requests on the wire finish
  for up to 5s; when none is (every event only waits to retry), it stops at once.
  ${examples(
    "wh replay events.ndjson --url https://example.com/hook --secret-file secret.txt",
    "wh replay events.ndjson --resume              # after a crash or Ctrl-C",
    "zcat big.ndjson.gz | wh replay - --concurrency 64 --json > results.ndjson",
    "wh replay captured.ndjson --dry-run | less",
    "wh replay captured.ndjson --message-id 4f1c2a9e-…   # resend one event",
    "wh replay events.ndjson --scheme standard --secret-file whsec.txt   # Standard Webhooks headers",
    'wh replay events.ndjson --shard "$JOB_COMPLETION_INDEX/4"   # one of 4 machines',
  )}`;

export const INGEST_HELP = `
  Batches never pass 500 KB; a message over 32 KB, or one that breaks the rules, is reported as
  "line N: reason", skipped, and makes the exit code 1. A batch is retried on 5xx, 429 and network
  errors (10 attempts at most); other 4xx are final. The messages of a failed batch and invalid lines
  go to the dead-letter file with their line numbers; Ctrl-C stops within 5 s, even while batches
  wait to retry, and --resume goes on; kill -USR1 <pid> (or the r key on a terminal) sends the
  batches waiting to retry at once. DEBUG=analytics logs every step on stderr.
  ${examples("WH_WRITE_KEY=wk_123 wh ingest events.ndjson --endpoint https://ingest.example.com", "cat events.ndjson | wh ingest - --flush-at 100 --json")}`;

export const SERVE_HELP = `${RETRY_HELP}

Write keys: with sources in the config, each source's writeKey selects its webhooks, secret and
mode, and an unknown key is answered 401; with flat settings any key is accepted. An accepted
request is answered {"success": true} only once its events are written and synced to the spool;
a full spool or disk is answered 503 with Retry-After, which Segment's SDKs retry. GET /health
and GET /metrics (Prometheus) tell how it goes; POST /retry retries waiting deliveries now
(refused with 403 when it carries an Origin header: not from a web page). Ctrl-C stops accepting, lets deliveries in flight
finish for up to 5 s, and keeps the rest in the spool for the next start.
${examples("wh serve                                   # embedded receiver: watch events arrive verified", "wh serve --url https://example.com/hook --secret-file secret.txt", "wh serve --config .whrc.json --port 8787 --data-dir /var/lib/wh --json", "wh serve --url https://example.com/hook --scheme standard --secret-file whsec.txt")}`;

/** The help of `wh audience sync` and `wh traits sync`. */
export function syncHelp(what: string, example: string): string {
  return `
The trait name is the snake_case form of NAME: lower case, every run of characters other than
letters and digits becomes one "_" (High-Value Users (EU) -> high_value_users_eu). ${what}
The state file (default <trait>.wh-state.json) records what was delivered, and only that: a
failed or interrupted sync sends the same changes again next time. It is written atomically.
${examples(example)}`;
}

export const CONFIG_HELP = `
  Config files (cosmiconfig, module "wh"): .whrc, .whrc.json, .whrc.yaml, .whrc.yml,
  wh.config.js/.mjs/.cjs, or the "wh" key of package.json, searched from the current
  directory up to the project root. Flags override WH_SHARED_SECRET, which overrides the file.
  ${examples("wh config show", "wh config validate --config ./ci/.whrc.json")}`;
