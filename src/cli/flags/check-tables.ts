import { MAX_ACTIONS_BATCH_SIZE } from "../../core/batch.js";
import { CASE_NAMES } from "../../core/check/case-names.js";
import { nameList, wholeNumber } from "./parsers.js";
import { flag, flagTable } from "./spec.js";
import { bodyScheme, deliveryFlags, secretFlags, subscriptions } from "./tables.js";

/** The flags of `wh check` (see tables.ts: declared once, as data). */
export const checkFlags = flagTable({
  secretFile: secretFlags.secretFile,
  secret: secretFlags.secret,
  scheme: flag({ ...bodyScheme, description: "segment: sign with X-Signature (default); standard: Standard Webhooks' headers, a whsec_ secret" }),
  mode: flag({
    syntax: "--mode <mode>",
    description: "classic: the seed's shapes (default); actions: Segment's Webhooks (Actions) destination, whole events and a batch",
    parse: deliveryFlags.mode.parse,
    complete: deliveryFlags.mode.complete,
  }),
  batchSize: flag({
    syntax: "--batch-size <n>",
    description: `actions mode: events in the batch case, 2 to ${MAX_ACTIONS_BATCH_SIZE} (default 3)`,
    parse: wholeNumber(2, MAX_ACTIONS_BATCH_SIZE),
  }),
  concurrency: flag({
    syntax: "--concurrency <n>",
    description: "requests in flight at once: of the cases sent together, and of the burst (1: one case after another)",
    default: "10",
    parse: wholeNumber(1, 100),
  }),
  only: flag({
    syntax: "--only <names>",
    description: "run only these cases (comma-separated, repeatable)",
    parse: nameList(CASE_NAMES, "case"),
    repeatable: true,
    complete: CASE_NAMES,
  }),
  skip: flag({
    syntax: "--skip <names>",
    description: "run every case but these (comma-separated, repeatable)",
    parse: nameList(CASE_NAMES, "case"),
    repeatable: true,
    complete: CASE_NAMES,
  }),
  ca: deliveryFlags.ca,
  subscriptions: flag({
    ...subscriptions,
    description: "JSON file of Webhooks (Actions) subscriptions: the type and batch cases send what they map, to URL (replaces the config's)",
  }),
  config: flag({ syntax: "--config <file>", description: "config file whose subscriptions (and their sharedSecret) to check with", complete: "file" }),
  junit: flag({ syntax: "--junit <file>", description: "also write the results as JUnit XML to FILE, for CI (replaced whole)", complete: "file" }),
  dryRun: flag({ syntax: "--dry-run", description: "list the cases with the exact bytes and headers of each request; send nothing" }),
});
