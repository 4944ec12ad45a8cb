import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";
import { withFastPath } from "../schema-check.js";
import { isJsonObject } from "./parse-json.js";
import { MESSAGE_TYPES, type MessageType } from "./types.js";

// zod/mini (the same library, its tree-shakable API) keeps every command that validates a small
// bundle: the classic API pulled 750 KB into `wh send`'s start-up. Its messages are English here.
z.config(en());


/** A message's type, with an error that says "missing type" when there is none. */
const messageType = z.enum(MESSAGE_TYPES, {
  error: (issue) => (issue.input === undefined ? `missing type (one of ${MESSAGE_TYPES.join(", ")})` : `expected one of ${MESSAGE_TYPES.join(", ")} (got ${JSON.stringify(issue.input)})`),
});

/**
 * A JSON object, checked but not copied: z.record would rebuild every properties, traits and
 * context object key by key, a cost that showed in replay's profile.
 */
const jsonObject = z.custom<Record<string, unknown>>(isJsonObject, {
  error: (issue) => `Invalid input: expected object, received ${issue.input === null ? "null" : Array.isArray(issue.input) ? "array" : typeof issue.input}`,
});
const optionalId = z.nullish(z.string());

/**
 * A Segment-spec message as a caller writes it or Segment holds it (flags, NDJSON lines, library
 * calls): the fields wh reads are checked; any others (receivedAt, channel, _metadata, …) pass.
 */
export const inboundMessageSchema = z.looseObject({
  type: messageType,
  version: z.optional(z.number()),
  userId: optionalId,
  anonymousId: optionalId,
  event: z.optional(z.string()),
  // Segment's SDKs send null for what the app did not give (analytics-python: page name and
  // category, anonymousId, userId): the tracking API takes null as absent, so wh does too.
  name: z.nullish(z.string()),
  category: z.nullish(z.string()),
  properties: z.nullish(jsonObject),
  traits: z.nullish(jsonObject),
  groupId: z.optional(z.string()),
  previousId: z.optional(z.string()),
  context: z.nullish(jsonObject),
  integrations: z.nullish(jsonObject),
  timestamp: z.nullish(z.string()),
  messageId: z.nullish(z.string().check(z.minLength(1))),
});
export type InboundMessage = z.infer<typeof inboundMessageSchema>;
export const parseInboundMessage = withFastPath(inboundMessageSchema);

const stringFields = <const K extends string>(...keys: K[]) =>
  z.looseObject(Object.fromEntries(keys.map((key) => [key, z.nullish(z.string())])) as Record<K, z.ZodMiniOptional<z.ZodMiniNullable<z.ZodMiniString>>>);

const PAGE_PROPERTY_STRINGS = ["path", "referrer", "title", "url"] as const;
const SCREEN_CONTEXT_STRINGS = { device: ["model", "type"], os: ["name", "version"], app: ["build", "name", "version"] } as const;

/** The seed's recognised page properties and screen context fields, all strings when present. */
export const pagePropertiesSchema = stringFields(...PAGE_PROPERTY_STRINGS);
export const screenContextSchema = z.looseObject({
  device: z.nullish(stringFields(...SCREEN_CONTEXT_STRINGS.device)),
  os: z.nullish(stringFields(...SCREEN_CONTEXT_STRINGS.os)),
  app: z.nullish(stringFields(...SCREEN_CONTEXT_STRINGS.app)),
});
export const parsePageProperties = withFastPath(pagePropertiesSchema);
export const parseScreenContext = withFastPath(screenContextSchema);

/**
 * The dotted paths, per message type and field, that the schema holds to be strings: a flag such
 * as `--prop path=5` keeps its value as text there instead of reading it as JSON.
 */
export function stringFieldPaths(type: MessageType, field: "properties" | "context" | "traits"): ReadonlySet<string> {
  if (type === "page" && field === "properties") return new Set(PAGE_PROPERTY_STRINGS);
  if (type === "screen" && field === "context") return new Set(Object.entries(SCREEN_CONTEXT_STRINGS).flatMap(([group, keys]) => keys.map((key) => `${group}.${key}`)));
  return new Set();
}

/** A message already in the classic outbound shape (a capture from `wh listen`, say). */
export const outboundMessageSchema = z.looseObject({
  version: z.optional(z.literal(1)),
  type: messageType,
  userId: optionalId,
  anonymousId: optionalId,
  event: z.optional(z.string()),
  name: z.optional(z.string()),
  properties: z.optional(jsonObject),
  traits: z.optional(jsonObject),
  groupId: z.optional(z.string()),
  context: z.optional(jsonObject),
  integrations: z.optional(jsonObject),
  "Previous ID": z.optional(z.string()),
  "User ID": z.optional(z.string()),
  timestamp: z.string(),
  messageId: z.optional(z.string()),
});
export const parseOutboundMessage = withFastPath(outboundMessageSchema);

/** Formats zod issues as `path: problem`, the way every error in wh names a place. */
export function formatIssues(error: z.core.$ZodError): string[] {
  return error.issues.flatMap((issue) => {
    // An unknown key is named by its own path: `webhook: unknown key` rather than a list.
    if (issue.code === "unrecognized_keys") return issue.keys.map((key) => `${formatPath([...issue.path, key])}: unknown key`);
    const path = formatPath(issue.path);
    return path === "" ? issue.message : `${path}: ${issue.message}`;
  });
}

/** A path in a file as issues name it: `webhooks[5].url`, `sources["my app"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === "" ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}
