import { hostName, oneOf, queueUrl, size, wholeNumber } from "./parsers.js";
import { flag, flagTable } from "./spec.js";
import { bodyScheme, concurrency, deliveryFlags, listenHost, subscriptions, tolerance } from "./tables.js";

/** The flags of the servers: wh listen, wh serve and its dead letters (see tables.ts). */

export const listenFlags = flagTable({
  port: flag({ syntax: "--port <port>", description: "port to listen on (default: a free port, printed at start)", parse: wholeNumber(0, 65_535) }),
  host: listenHost,
  secretFile: flag({ syntax: "--secret-file <file>", description: "check X-Signature with the secret in FILE", complete: "file" }),
  secret: flag({ syntax: "--secret <secret>", description: "check X-Signature with this secret (WH_SHARED_SECRET works too)" }),
  scheme: flag({ ...bodyScheme, description: "segment: check X-Signature (default); standard: Standard Webhooks' headers, with a whsec_ secret" }),
  tolerance,
  status: flag({ syntax: "--status <code>", description: "status to answer accepted requests with", default: "200", parse: wholeNumber(100, 599) }),
  out: flag({
    syntax: "--out <file.ndjson>",
    description:
      "append every accepted request to this NDJSON file as {receivedAt, method, path, headers, body} (wh replay sends them again, wh verify --capture checks them)",
    complete: "file",
  }),
  forwardTo: flag({
    syntax: "--forward-to <url>",
    description:
      "send each request that passes verification on to your app, exact bytes and headers; the app's answer is the answer (with --route: the requests no route takes)",
  }),
  filter: flag({
    syntax: "--filter <fql>",
    description:
      'print, show and forward only the requests whose event matches this FQL condition, as subscriptions\' triggers read (type = "track" and event = "Order Completed"); the others are answered and captured',
  }),
  route: flag({
    syntax: "--route <'fql => url'>",
    description:
      "forward the requests whose event matches FQL to URL (repeatable: the first route that matches; a request no route takes goes to --forward-to, else is answered here)",
    repeatable: true,
  }),
  ui: flag({
    syntax: "--ui",
    description:
      "serve a live inspector page (its URL is printed): each request's headers, body, verdict and answer; resend, copy as curl; with --out, the file's last 1,000 requests first, marked earlier",
  }),
});

const queue = flag({
  syntax: "--queue <url>",
  description: "keep accepted events in Redis Streams (redis://[user:password@]host:port[/db]) instead of the spool",
  parse: queueUrl,
  config: "queue",
});

const dataDir = flag({
  syntax: "--data-dir <dir>",
  description: "where accepted events are spooled until delivered, and the dead letters",
  default: ".wh/serve",
  complete: "file",
});

export const serveFlags = flagTable({
  ...deliveryFlags,
  subscriptions,
  // A fixed port, so that an app's SDK settings stay put.
  port: flag({ syntax: "--port <port>", description: "port of the tracking API (0: any free port)", default: "8787", parse: wholeNumber(0, 65_535) }),
  host: listenHost,
  allowHost: flag({
    syntax: "--allow-host <name>",
    description:
      "also answer /health, /metrics and /retry for requests to NAME, with any port (a proxy's or a DNS name of the server; repeatable; allowHosts in the config); by default only the server's own address and localhost",
    parse: hostName,
    repeatable: true,
    config: "allowHosts",
  }),
  dataDir,
  maxBody: flag({
    syntax: "--max-body <size>",
    description: "largest request body, after gzip (analytics-node sends batches up to about 1 MB: raise this for it)",
    default: "500kb",
    parse: size(),
  }),
  maxSpool: flag({ syntax: "--max-spool <size>", description: "answer 503 with Retry-After once the spool holds this much", default: "1gb", parse: size() }),
  concurrency: flag({ ...concurrency, description: "deliveries in flight at once, per source" }),
  dedupWindow: flag({
    syntax: "--dedup-window <n>",
    description: "drop an event whose messageId is among the last N accepted for its source; memory: 16-32 bytes per id per source (100000: 2-3 MB)",
    default: "100000",
    parse: wholeNumber(0, 10_000_000),
  }),
  ui: flag({ syntax: "--ui", description: "serve a live inspector page (its URL is printed): each accepted event with its deliveries; resend, copy as curl" }),
  queue,
  partitions: flag({
    syntax: "--partitions <n>",
    description: "with --queue: partitions of a new queue (default 64; fixed for the life of the queue)",
    parse: wholeNumber(1, 16_384),
  }),
  role: flag({
    syntax: "--role <role>",
    description: "with --queue: accept, forward, or both (default)",
    parse: oneOf(["accept", "forward", "both"]),
    complete: ["accept", "forward", "both"],
  }),
  deadLetter: flag({
    syntax: "--dead-letter <file>",
    description: "with --queue: dead letters to this file too (they always go to the queue's dead-letter stream)",
    complete: "file",
  }),
});

const deadLetterQueueFlags = flagTable({
  queue: flag({ ...queue, description: "the Redis queue (default: queue in the config; without one, the spool of --data-dir)" }),
  dataDir: flag({ ...dataDir, description: "without a queue: wh serve's data directory, whose dead-letters*.ndjson these are" }),
  config: flag({ syntax: "--config <file>", description: "config file (default: search)", complete: "file" }),
});

export const deadLettersListFlags = deadLetterQueueFlags;
export const deadLettersReplayFlags = flagTable({
  ...deadLetterQueueFlags,
  id: flag({ syntax: "--id <id>", description: "only this dead letter (repeatable; default: all)", repeatable: true }),
});
