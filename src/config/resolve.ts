import { readFile } from "node:fs/promises";
import { resolve as resolvePath } from "node:path";
import { describeFsError } from "../adapters/read-input.js";
import { destinationTimeoutMs, type WebhookTarget } from "../core/deliver.js";
import {
  compileSubscriptions,
  nameSubscriptionIssues,
  type SubscriptionConfig,
  type SubscriptionSet,
  subscriptionsSchema,
} from "../core/destination/subscriptions.js";
import { formatIssues } from "../core/message/schema.js";
import { safeParse } from "../core/schema-check.js";
import { stripBom } from "../core/text.js";
import { ConfigError, UsageError } from "../core/errors.js";
import { checkDeliveryShape, checkSchemeSecret, DEFAULT_RETRY_WINDOW_MS, type HttpMethod, webhookTarget } from "./destination.js";
import { loadConfig } from "./load.js";
import type { DestinationMode } from "../core/message/prepare.js";
import type { EventFilter, FilterConfig } from "../core/destination/filters.js";
import { loadEventFilter } from "../adapters/tsub.js";
import { parseWebhooks, type WebhookConfig, type WhConfig } from "./schema.js";
import { flagIssue, parseHeaderFlags } from "./header-flags.js";
import { secretFromFlagsOrEnv, type SecretFlags, type SecretOrigin } from "./secret.js";
import type { SigningScheme } from "../core/standard-webhooks.js";

/**
 * What the user chose for delivery, parsed: the delivery flags of the command line (cli/flags/tables.ts
 * deliveryFlags, whose parsed values every delivering command passes here as they are).
 */
export interface DeliveryFlags extends SecretFlags {
  config?: string | undefined;
  url?: string[] | undefined;
  header?: string[] | undefined;
  ca?: string[] | undefined;
  /** Milliseconds. */
  timeout?: number | undefined;
  /** Milliseconds; DEFAULT_RETRY_WINDOW_MS when absent. */
  retryWindow?: number | undefined;
  maxAttempts?: number | undefined;
  source?: string | undefined;
  mode?: DestinationMode | undefined;
  method?: HttpMethod | undefined;
  batchSize?: number | undefined;
  scheme?: SigningScheme | undefined;
  /** A JSON file of subscriptions (the array, or the Public API's answer): replaces the config's. */
  subscriptions?: string | undefined;
}

/** Where one message goes: a source's URLs, with its headers and secret. */
export interface Destination {
  /** The source's name in the config's `sources`; undefined for the flat settings. */
  source: string | undefined;
  /** The source's write key (what `wh serve` knows it by). */
  writeKey: string | undefined;
  enabled: boolean;
  targets: WebhookTarget[];
  sharedSecret: string | undefined;
  secretOrigin: SecretOrigin | undefined;
  /** How the secret signs: Segment's X-Signature, or Standard Webhooks' webhook-id, -timestamp and -signature. */
  scheme: SigningScheme;
  /** classic (the seed's shapes) or actions (whole events, PUT/PATCH, batches). */
  mode: DestinationMode;
  method: HttpMethod;
  /** Events per request: 1 is one event per request; more is an Actions batch (a JSON array). */
  batchSize: number;
  /** How long one attempt waits for its answer: --timeout, else the mode's (destinationTimeoutMs). */
  timeoutMs: number;
  /** A Webhooks (Actions) destination's subscriptions: each event goes to those its triggers match, as each maps it (targets is then empty). */
  subscriptions?: SubscriptionSet | undefined;
  /** Destination filters as configured: the source's own, else the top level's. */
  filters?: FilterConfig[] | undefined;
  /** The enabled ones as one function, applied to each event before it is shaped; absent when none is. */
  filter?: EventFilter | undefined;
}

export type { HttpMethod } from "./destination.js";

export interface DeliverySettings {
  configPath: string | undefined;
  destinations: Destination[];
  /** --ca files as given, read relative to `cwd` (messages name them as given). */
  caFiles: string[];
  cwd: string;
  timeoutMs: number;
  retryWindowMs: number;
  /** Attempts per URL at most, the first included; unlimited by default (the window decides). */
  maxAttempts: number;
}

/** one: the source --source names, or the only one. all-enabled: every enabled source when no --source (delete). all: every source (config show). */
export type SourceSelection = "one" | "all-enabled" | "all";

/** Flags override the environment, the environment overrides the config file. */
export async function resolveDeliverySettings(
  flags: DeliveryFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  selection: SourceSelection = "one",
  /** The command delivers to subscriptions (wh send, wh replay, wh serve); the others refuse a config with them. */
  takesSubscriptions = false,
): Promise<DeliverySettings> {
  const timeoutMs = flags.timeout ?? destinationTimeoutMs("classic");
  const retryWindowMs = flags.retryWindow ?? DEFAULT_RETRY_WINDOW_MS;
  const maxAttempts = flags.maxAttempts ?? Number.POSITIVE_INFINITY;
  const secret = await secretFromFlagsOrEnv(flags, env, cwd);
  const flagHeaders = parseHeaderFlags(flags.header ?? []);
  const { config, filepath } = await loadConfig(cwd, flags.config);
  const subscriptions = await readSubscriptions(flags, config, cwd, takesSubscriptions);
  if (subscriptions !== undefined) {
    const destination = subscriptionDestination(
      flags,
      subscriptions,
      secret ?? (config.sharedSecret === undefined ? undefined : { value: config.sharedSecret, origin: "config file" }),
      flags.scheme ?? config.scheme ?? "segment",
    );
    // Destination filters run before the subscriptions, as Segment applies them before the destination's actions.
    const { filters } = config;
    const filtered = filters === undefined ? destination : { ...destination, filters, filter: await loadEventFilter(filters) };
    return { configPath: filepath, destinations: [filtered], caFiles: flags.ca ?? [], cwd, timeoutMs: destination.timeoutMs, retryWindowMs, maxAttempts };
  }
  let chosen = chooseSources(config, flags.source, selection);
  if (flags.url !== undefined && flags.url.length > 0) {
    // --url makes one destination; it takes a source's secret only when that source is clear.
    const base = flags.source !== undefined || chosen.length === 1 ? chosen[0] : undefined;
    chosen = [{ ...base, source: base?.source, enabled: true, webhooks: flags.url.map((url) => ({ url })), sharedSecret: base?.sharedSecret }];
  }
  if (chosen.every((choice) => choice.webhooks.length === 0)) {
    throw new UsageError("no webhook URL to deliver to", { hint: "pass --url URL, or set webhooks in a config file (.whrc.json)" });
  }
  const destinations = chosen.map(async (choice): Promise<Destination> => {
    const webhooks = choice.webhooks.map((hook) => ({ url: hook.url, headers: { ...hook.headers, ...flagHeaders } }));
    const checked = parseWebhooks(webhooks);
    // Flag headers go to every URL: one issue each, not one per URL.
    if (!checked.ok) throw new ConfigError([...new Set(checked.issues.map(flagIssue))], { source: "the flags" });
    const shape = deliveryShapeOf(flags, choice, config);
    const filters = choice.filters ?? config.filters;
    return checkSchemeSecret({
      source: choice.source,
      writeKey: choice.writeKey,
      enabled: choice.enabled,
      ...shape,
      timeoutMs: flags.timeout ?? destinationTimeoutMs(shape.mode),
      targets: checked.value.map((hook) => webhookTarget(new URL(hook.url), hook.headers ?? {})),
      sharedSecret: secret?.value ?? choice.sharedSecret,
      secretOrigin: secret?.origin ?? (choice.sharedSecret === undefined ? undefined : "config file"),
      ...(filters === undefined ? {} : { filters, filter: await loadEventFilter(filters) }),
    });
  });
  return { configPath: filepath, destinations: await Promise.all(destinations), caFiles: flags.ca ?? [], cwd, timeoutMs, retryWindowMs, maxAttempts };
}

/** The subscriptions of --subscriptions FILE, else of the config, compiled with Segment's engines (loaded only then). */
export async function readSubscriptions(
  flags: DeliveryFlags,
  config: WhConfig,
  cwd: string,
  takesSubscriptions: boolean,
): Promise<SubscriptionSet | undefined> {
  const fromFile = flags.subscriptions === undefined ? undefined : await readSubscriptionsFile(flags.subscriptions, cwd);
  const configs = fromFile ?? config.subscriptions;
  if (configs === undefined) return undefined;
  if (!takesSubscriptions) {
    throw new UsageError(
      "this command does not deliver to subscriptions (wh send, replay, serve, check and the syncs do; wh ingest posts to an ingestion API, not to a destination)",
      {
        hint: "use a config without subscriptions here (--config FILE)",
      },
    );
  }
  return compileWithEngines(configs, flags.subscriptions ?? "the config's subscriptions");
}

/** Checks subscriptions with Segment's engines, loaded now (ConfigError, naming each subscription and field). */
export async function compileWithEngines(configs: readonly SubscriptionConfig[], source: string): Promise<SubscriptionSet> {
  const { loadSegmentEngines } = await import("../adapters/segment-engines.js");
  const engines = loadSegmentEngines();
  const compiled = compileSubscriptions(configs, engines);
  if (!compiled.ok) throw new ConfigError(compiled.issues, { source });
  return { subscriptions: compiled.value, engines };
}

async function readSubscriptionsFile(file: string, cwd: string): Promise<SubscriptionConfig[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(stripBom(await readFile(resolvePath(cwd, file), "utf8")));
  } catch (error) {
    const problem = error instanceof SyntaxError ? "not valid JSON" : describeFsError(error);
    throw new ConfigError([problem], { source: file });
  }
  const parsed = safeParse(subscriptionsSchema, raw);
  if (!parsed.success) {
    const issues = formatIssues(parsed.error).map((issue) => `subscriptions${issue.startsWith("[") ? "" : ": "}${issue}`);
    throw new ConfigError(nameSubscriptionIssues(issues, raw), { source: file });
  }
  return parsed.data;
}

/**
 * The one destination of a config with subscriptions: actions mode, the URLs, methods and headers
 * from each mapping. The flags that set them for plain URLs are refused rather than half-applied.
 */
function subscriptionDestination(
  flags: DeliveryFlags,
  subscriptions: SubscriptionSet,
  secret: { value: string; origin: SecretOrigin } | undefined,
  scheme: SigningScheme,
): Destination {
  const refused = (
    [
      ["--url", flags.url !== undefined && flags.url.length > 0, "each subscription's settings.url"],
      ["--header", flags.header !== undefined && flags.header.length > 0, "each subscription's settings.headers"],
      ["--method", flags.method !== undefined, "each subscription's settings.method"],
      ["--batch-size", flags.batchSize !== undefined, "each subscription's enable_batching and batch_size"],
      ["--mode classic", flags.mode === "classic", "subscriptions, which are Actions mappings"],
      ["--source", flags.source !== undefined, "subscriptions, which have no sources"],
    ] as const
  ).find(([, given]) => given);
  if (refused !== undefined) {
    throw new UsageError(`${refused[0]} cannot be used with subscriptions: the deliveries follow ${refused[2]}`, {
      hint: "edit the subscriptions, or use a config without them (--config FILE)",
    });
  }
  return checkSchemeSecret({
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: [],
    sharedSecret: secret?.value,
    secretOrigin: secret?.origin,
    scheme,
    mode: "actions",
    method: "POST",
    batchSize: 1,
    timeoutMs: flags.timeout ?? destinationTimeoutMs("actions"),
    subscriptions,
  });
}

interface SourceChoice {
  source: string | undefined;
  enabled: boolean;
  writeKey?: string | undefined;
  webhooks: WebhookConfig[];
  sharedSecret: string | undefined;
  mode?: DestinationMode | undefined;
  method?: HttpMethod | undefined;
  batchSize?: number | undefined;
  scheme?: SigningScheme | undefined;
  filters?: FilterConfig[] | undefined;
}

/** The mode, method, batch size and signing scheme: flags, then the source's, then the config's top level. */
function deliveryShapeOf(flags: DeliveryFlags, choice: SourceChoice, config: WhConfig): Pick<Destination, "mode" | "method" | "batchSize" | "scheme"> {
  const mode = flags.mode ?? choice.mode ?? config.mode ?? "classic";
  const method = flags.method ?? choice.method ?? config.method ?? "POST";
  const batchSize = flags.batchSize ?? choice.batchSize ?? config.batchSize ?? 1;
  checkDeliveryShape({ mode, method, batchSize });
  return { mode, method, batchSize, scheme: flags.scheme ?? choice.scheme ?? config.scheme ?? "segment" };
}

/** The sources a command is for: see SourceSelection. The flat settings are one unnamed source. */
export function chooseSources(config: WhConfig, name: string | undefined, selection: SourceSelection): SourceChoice[] {
  const sources = Object.entries(config.sources ?? {}).map(
    ([source, value]): SourceChoice => ({
      source,
      enabled: value.enabled ?? true,
      writeKey: value.writeKey,
      webhooks: value.webhooks,
      sharedSecret: value.sharedSecret,
      mode: value.mode,
      method: value.method,
      batchSize: value.batchSize,
      scheme: value.scheme,
      filters: value.filters,
    }),
  );
  if (sources.length === 0) {
    if (name !== undefined) throw new UsageError(`--source ${name}: the config defines no sources`);
    // A file may hold only the secret, with the URLs given by --url.
    return [{ source: undefined, enabled: true, webhooks: config.webhooks ?? [], sharedSecret: config.sharedSecret }];
  }
  const names = sources.map((source) => source.source).join(", ");
  if (name !== undefined) {
    const found = sources.find((source) => source.source === name);
    if (found === undefined) throw new UsageError(`--source ${name}: no such source (the config has: ${names})`);
    if (!found.enabled && selection !== "all") throw new UsageError(`--source ${name}: the destination is disabled for this source (enabled: false)`);
    return [found];
  }
  if (selection === "all") return sources;
  if (selection === "all-enabled") return sources.filter((source) => source.enabled);
  if (sources.length === 1 && sources[0]?.enabled) return sources;
  throw new UsageError(`the config has several sources; pick one with --source NAME (one of: ${names})`);
}
