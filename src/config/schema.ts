import * as z from "zod/mini";
import { formatIssues, formatPath } from "../core/message/schema.js";
import { hostNameProblem } from "../core/host-name.js";
import { queueUrlProblem } from "../core/queue-url.js";
import { redactUrlText } from "../core/redact.js";
import { safeParse } from "../core/schema-check.js";
import { MAX_ACTIONS_BATCH_SIZE } from "../core/batch.js";
import { nameSubscriptionIssues, subscriptionsSchema } from "../core/destination/subscriptions.js";
import { filtersSchema } from "./filters-schema.js";
import type { FilterConfig } from "../core/destination/filters.js";

/** The most webhook URLs one destination may have (the seed's limit). */
export const MAX_WEBHOOKS = 5;

/** Headers wh sets itself; a static header may not replace them. */
export const OWNED_HEADERS = [
  "content-type",
  "content-length",
  "host",
  "transfer-encoding",
  "user-agent",
  "x-signature",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "connection",
] as const;

/** Headers that change how HTTP itself works: every delivery with one would fail (undici refuses them). */
const UNWORKABLE_HEADERS = /^(expect|upgrade|keep-alive|te|trailer|proxy-.*)$/i;

const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * What a header value may hold (RFC 9110 field-value: tab, visible ASCII, and obs-text bytes up
 * to U+00FF). Anything else (CR, LF, NUL, the other controls, DEL, characters past U+00FF) would
 * pass here and then fail every attempt in undici.
 */
const HEADER_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/u;

const webhookUrl = z.string().check(
  z.superRefine((text, ctx) => {
    let url: URL;
    // Error messages show the URL with its password and secret-looking parameters masked.
    const shown = JSON.stringify(redactUrlText(text));
    try {
      url = new URL(text);
    } catch {
      ctx.addIssue({ code: "custom", message: `${shown} is not an absolute URL (give the whole URL, with http:// or https://)` });
      return;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      ctx.addIssue({ code: "custom", message: `${shown} is not an http or https URL` });
    }
  }),
);

const staticHeaders = z.record(z.string(), z.string()).check(
  z.superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const path = [name];
      if (!HEADER_TOKEN.test(name)) ctx.addIssue({ code: "custom", path, message: `${JSON.stringify(name)} is not a valid header name` });
      else if ((OWNED_HEADERS as readonly string[]).includes(name.toLowerCase())) {
        ctx.addIssue({ code: "custom", path, message: `${name} is set by wh and cannot be configured` });
      } else if (UNWORKABLE_HEADERS.test(name)) {
        ctx.addIssue({ code: "custom", path, message: `${name} is a hop-by-hop or protocol header: a request carrying it cannot be delivered` });
      }
      const bad = HEADER_VALUE_CHAR.exec(value)?.[0];
      if (bad !== undefined) ctx.addIssue({ code: "custom", path, message: describeBadHeaderChar(bad) });
    }
  }),
);

function describeBadHeaderChar(char: string): string {
  const code = `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
  if (char.charCodeAt(0) > 0xff) return `header value must not contain ${code}: a header value holds bytes up to U+00FF (percent-encode the text)`;
  return `header value must not contain ${code}: control characters other than tab (CR, LF, NUL, ESC, DEL, …) are not allowed`;
}

const webhookSchema = z.strictObject({ url: webhookUrl, headers: z.optional(staticHeaders) });

const webhooksSchema = z.array(webhookSchema).check(
  z.minLength(1, "at least one webhook URL is required"),
  z.superRefine((list, ctx) => {
    if (list.length > MAX_WEBHOOKS) {
      ctx.addIssue({ code: "custom", path: [MAX_WEBHOOKS], message: `${list.length} webhooks given; at most ${MAX_WEBHOOKS} are allowed` });
    }
  }),
);

const nonEmpty = z.string().check(z.minLength(1));
const secretSchema = z.string().check(z.minLength(1, "must not be empty"));

/** How a destination delivers: the classic shapes or Actions' whole events, the method, batches. */
const deliveryShape = {
  mode: z.optional(z.enum(["classic", "actions"])),
  method: z.optional(z.enum(["POST", "PUT", "PATCH"])),
  batchSize: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_ACTIONS_BATCH_SIZE))),
  /** How sharedSecret signs: segment (X-Signature, the default) or standard (Standard Webhooks). */
  scheme: z.optional(z.enum(["segment", "standard"])),
  /** Destination filters (a source's own replace the top level's): see filters-schema.ts. */
  filters: z.optional(filtersSchema),
};

const sourceSchema = z.strictObject({
  writeKey: z.optional(nonEmpty),
  enabled: z.optional(z.boolean()),
  webhooks: webhooksSchema,
  sharedSecret: z.optional(secretSchema),
  ...deliveryShape,
});

/**
 * `wh serve` knows a source by its write key: two sources with one key would send the second's
 * events to the first. A source needs no key for `wh send --source` or a delete's fan-out.
 */
const sourcesSchema = z.record(nonEmpty, sourceSchema).check(
  z.superRefine((sources, ctx) => {
    const names = Object.keys(sources);
    if (names.length === 0) ctx.addIssue({ code: "custom", message: "no sources: define at least one, or leave sources out" });
    const firstWithKey = new Map<string, string>();
    for (const name of names) {
      const writeKey = sources[name]?.writeKey;
      if (writeKey === undefined) continue;
      const first = firstWithKey.get(writeKey);
      if (first === undefined) firstWithKey.set(writeKey, name);
      else
        ctx.addIssue({
          code: "custom",
          path: [name, "writeKey"],
          message: `the same writeKey as ${formatPath(["sources", first])} (wh serve routes requests by write key: each source needs its own)`,
        });
    }
  }),
);

export const configSchema = z
  .strictObject({
    webhooks: z.optional(webhooksSchema),
    sharedSecret: z.optional(secretSchema),
    ...deliveryShape,
    sources: z.optional(sourcesSchema),
    /** A Webhooks (Actions) destination's subscriptions as Segment's Public API returns them: actions mode, URLs from the mappings. */
    subscriptions: z.optional(subscriptionsSchema),
    ingest: z.optional(z.strictObject({ endpoint: z.optional(webhookUrl), writeKey: z.optional(nonEmpty) })),
    /** wh serve's queue: Redis Streams at redis://[user:password@]host:port[/db] (rediss:// for TLS). */
    queue: z.optional(
      z.string().check(
        z.superRefine((text, ctx) => {
          const problem = queueUrlProblem(text);
          if (problem !== undefined) ctx.addIssue({ code: "custom", message: `${JSON.stringify(redactUrlText(text))}: ${problem}` });
        }),
      ),
    ),
    /** Names besides its own that wh serve's /health, /metrics and /retry answer (--allow-host). */
    allowHosts: z.optional(
      z.array(
        z.string().check(
          z.superRefine((text, ctx) => {
            const problem = hostNameProblem(text);
            if (problem !== undefined) ctx.addIssue({ code: "custom", message: `${JSON.stringify(text)}: ${problem}` });
          }),
        ),
      ),
    ),
  })
  .check(
    z.superRefine((config, ctx) => {
      if (config.sources !== undefined && (config.webhooks !== undefined || config.sharedSecret !== undefined)) {
        ctx.addIssue({ code: "custom", path: ["sources"], message: "use either sources or the top-level webhooks/sharedSecret, not both" });
      }
      for (const issue of subscriptionConflicts(config)) ctx.addIssue({ code: "custom", path: ["subscriptions"], message: issue });
    }),
  );

/** What subscriptions cannot go with: they give the URLs, and they are Actions mappings. */
function subscriptionConflicts(config: {
  subscriptions?: unknown;
  webhooks?: unknown;
  sources?: unknown;
  mode?: unknown;
  method?: unknown;
  batchSize?: unknown;
}): string[] {
  if (config.subscriptions === undefined) return [];
  const issues: string[] = [];
  if (config.webhooks !== undefined) issues.push("use either subscriptions (each mapping has its url) or webhooks, not both");
  if (config.sources !== undefined) issues.push("subscriptions go with the top-level sharedSecret, not with sources");
  if (config.mode === "classic") issues.push("subscriptions are a Webhooks (Actions) destination's: mode must be actions (or left out)");
  if (config.method !== undefined || config.batchSize !== undefined)
    issues.push("with subscriptions, each mapping sets its method and batching (settings.method, enable_batching, batch_size)");
  return issues;
}

export type WhConfig = z.infer<typeof configSchema>;
export type WebhookConfig = z.infer<typeof webhookSchema>;

export type ParseConfigResult = { ok: true; value: WhConfig } | { ok: false; issues: string[] };

/** Validates a configuration: pure, with one `path: problem` line per issue. */
export function parseConfig(input: unknown): ParseConfigResult {
  const parsed = safeParse(configSchema, input ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  const raw = typeof input === "object" && input !== null ? (input as { subscriptions?: unknown }).subscriptions : undefined;
  return { ok: false, issues: nameSubscriptionIssues(formatIssues(parsed.error), raw) };
}

/** Validates destination filters given to the library's sender, with the config's rules. */
export function parseFilters(input: unknown): { ok: true; value: FilterConfig[] } | { ok: false; issues: string[] } {
  const parsed = safeParse(filtersSchema, input);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: formatIssues(parsed.error) };
}

/** Validates webhooks given on the command line, with the same rules as the file's. */
export function parseWebhooks(input: unknown): { ok: true; value: WebhookConfig[] } | { ok: false; issues: string[] } {
  const parsed = safeParse(webhooksSchema, input);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: formatIssues(parsed.error) };
}
