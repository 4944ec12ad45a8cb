import * as z from "zod/mini";
import type { SegmentEngines } from "./engines.js";
import { DEFAULT_SEND_BATCH_SIZE, MAX_SEND_BATCH_SIZE, SEND_SETTINGS, sendDefaults } from "./send-action.js";

/** The most subscriptions (mappings) one Webhooks (Actions) destination has (segment-docs actions-webhook). */
export const MAX_SUBSCRIPTIONS = 5;

/**
 * One subscription as Segment's Public API returns it (`GET /destinations/{id}/subscriptions`):
 * loose, so the API's other keys (actionId, destinationId, modelId, …) are taken as they come.
 */
const subscriptionSchema = z.looseObject({
  id: z.optional(z.string()),
  name: z.string().check(z.minLength(1, "must not be empty")),
  actionSlug: z.literal("send", 'must be "send" (the only action of the Webhooks (Actions) destination)'),
  enabled: z.boolean(),
  trigger: z.string().check(z.minLength(1, 'must not be empty: an FQL condition such as type = "track"')),
  settings: z.record(z.string(), z.unknown()).check(
    z.superRefine((settings, ctx) => {
      for (const key of Object.keys(settings)) {
        if (!(SEND_SETTINGS as readonly string[]).includes(key)) {
          ctx.addIssue({ code: "custom", path: [key], message: `unknown setting (the Send action has: ${SEND_SETTINGS.join(", ")})` });
        }
      }
      const batching = settings.enable_batching;
      if (batching !== undefined && typeof batching !== "boolean")
        ctx.addIssue({ code: "custom", path: ["enable_batching"], message: "must be true or false" });
      const size = settings.batch_size;
      if (size !== undefined && (!Number.isInteger(size) || (size as number) < 0 || (size as number) > MAX_SEND_BATCH_SIZE)) {
        ctx.addIssue({ code: "custom", path: ["batch_size"], message: `must be a whole number from 0 to ${MAX_SEND_BATCH_SIZE}` });
      }
    }),
  ),
});

const subscriptionListSchema = z.array(subscriptionSchema).check(
  z.superRefine((list, ctx) => {
    if (list.length > MAX_SUBSCRIPTIONS) {
      ctx.addIssue({
        code: "custom",
        path: [MAX_SUBSCRIPTIONS],
        message: `${list.length} subscriptions given; a destination has at most ${MAX_SUBSCRIPTIONS}`,
      });
    }
  }),
);

/** The array, or the Public API's whole answer (`{ data: { subscriptions: [...] } }`), taken as its array. */
function subscriptionList(value: unknown): unknown {
  const data = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as { data?: unknown }).data : undefined;
  return typeof data === "object" && data !== null && "subscriptions" in data ? (data as { subscriptions: unknown }).subscriptions : value;
}

export const subscriptionsSchema = z.pipe(z.transform(subscriptionList), subscriptionListSchema);

export type SubscriptionConfig = z.infer<typeof subscriptionSchema>;

/** A subscription ready to route events: its trigger compiled, its mapping with the action's defaults. */
export interface Subscription {
  name: string;
  id: string | undefined;
  enabled: boolean;
  trigger: string;
  matches: (event: unknown) => boolean;
  /** The Send action's mapping (settings without enable_batching), defaults filled in. */
  mapping: Record<string, unknown>;
  /** Events per request when Segment batches (enable_batching), else undefined. */
  batchSize: number | undefined;
}

/** A destination's subscriptions and the engines that route events to them. */
export interface SubscriptionSet {
  subscriptions: readonly Subscription[];
  engines: SegmentEngines;
}

/** How issues name a subscription: `subscriptions[1] ("People").trigger`. */
export function subscriptionPath(index: number, name: string | undefined, field?: string): string {
  return `subscriptions[${index}]${name === undefined ? "" : ` (${JSON.stringify(name)})`}${field === undefined ? "" : `.${field}`}`;
}

/**
 * Checks what only Segment's engines can (each trigger's FQL, each mapping's directives) and
 * makes the subscriptions: `issues` name the subscription and the field.
 */
export function compileSubscriptions(
  configs: readonly SubscriptionConfig[],
  engines: SegmentEngines,
): { ok: true; value: Subscription[] } | { ok: false; issues: string[] } {
  const issues: string[] = [];
  const value: Subscription[] = [];
  configs.forEach((config, index) => {
    const trigger = engines.compileTrigger(config.trigger);
    if (!trigger.ok) issues.push(`${subscriptionPath(index, config.name, "trigger")}: not valid FQL (${trigger.error}): ${JSON.stringify(config.trigger)}`);
    const { enable_batching: batching, ...settings } = config.settings;
    const mapping = { ...sendDefaults(), ...settings };
    for (const problem of engines.mappingProblems(mapping)) issues.push(`${subscriptionPath(index, config.name, "settings")}: ${problem}`);
    if (!("url" in settings)) issues.push(`${subscriptionPath(index, config.name, "settings.url")}: missing (where the Send action delivers to)`);
    if (!trigger.ok) return;
    const size = typeof mapping.batch_size === "number" && mapping.batch_size > 0 ? mapping.batch_size : DEFAULT_SEND_BATCH_SIZE;
    value.push({
      name: config.name,
      id: config.id,
      enabled: config.enabled,
      trigger: config.trigger,
      matches: trigger.matches,
      mapping,
      batchSize: batching === true ? size : undefined,
    });
  });
  const names = new Set<string>();
  configs.forEach((config, index) => {
    if (names.has(config.name))
      issues.push(`${subscriptionPath(index, config.name, "name")}: another subscription has this name (failures and dead letters name subscriptions by it)`);
    names.add(config.name);
  });
  return issues.length === 0 ? { ok: true, value } : { ok: false, issues };
}

/**
 * Structural issues of a config's `subscriptions` (`subscriptions[1].trigger: …`) with each
 * subscription named as the file names it: `subscriptions[1] ("People").trigger: …`.
 */
export function nameSubscriptionIssues(issues: readonly string[], raw: unknown): string[] {
  const list = subscriptionList(raw);
  return issues.map((issue) =>
    issue.replace(/^subscriptions\[(\d+)\]/, (whole, index: string) => {
      const name = Array.isArray(list) ? (list[Number(index)] as { name?: unknown } | undefined)?.name : undefined;
      return typeof name === "string" ? subscriptionPath(Number(index), name) : whole;
    }),
  );
}
