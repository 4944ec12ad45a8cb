import type { WhConfig } from "../../config/schema.js";
import { serveFlags } from "./server-tables.js";
import type { Flag } from "./spec.js";
import { deliveryFlags, ingestFlags, subscriptions } from "./tables.js";

/** What sets a config key for one run: its flags, or nothing but the file. */
export type ConfigKeySource = readonly [Flag, ...Flag[]] | "file only";

/** Every key of a config (optional ones included), each with its flags or "file only". */
export type ConfigKeyFlags<C = WhConfig> = { readonly [K in keyof C]-?: ConfigKeySource };

/**
 * Every key of the config file, with the flags that set it for one run, or "file only". The
 * compiler holds it to the schema: a key added to the schema without saying which fails to
 * compile, and so does a key the schema does not have. docs/commands.md lists it.
 */
export const CONFIG_KEY_FLAGS = {
  webhooks: [deliveryFlags.url, deliveryFlags.header],
  sharedSecret: [deliveryFlags.secret, deliveryFlags.secretFile],
  mode: [deliveryFlags.mode],
  method: [deliveryFlags.method],
  batchSize: [deliveryFlags.batchSize],
  scheme: [deliveryFlags.scheme],
  // A destination's filters are JSON objects, one rule per action (filters-schema.ts): no flag.
  filters: "file only",
  // --source picks one of them; what they are is written only in the file.
  sources: "file only",
  subscriptions: [subscriptions],
  ingest: [ingestFlags.endpoint, ingestFlags.writeKey],
  queue: [serveFlags.queue],
  queueWait: [serveFlags.queueWaitReplicas, serveFlags.queueWaitTimeout],
  allowHosts: [serveFlags.allowHost],
} as const satisfies ConfigKeyFlags;
