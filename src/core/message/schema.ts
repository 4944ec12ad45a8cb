import type * as z from "zod/mini";
import { custom, literal, looseObject, nonEmptyString, nullish, number, oneOf, optional, string, withFastPath } from "../schema-check.js";
import { isJsonObject } from "./parse-json.js";
import { MESSAGE_TYPES, type MessageType } from "./types.js";

// zod/mini (the same library, its tree-shakable API) keeps every command that validates a small
// bundle: the classic API pulled 750 KB into `wh send`'s start-up. Its messages are English, set
// per parse (schema-check.ts's safeParse), never with z.config: that would reset the host's locale.

/** A message's type, with an error that says "missing type" when there is none. */
const messageType = oneOf(MESSAGE_TYPES, {
  error: (issue) =>
    issue.input === undefined
      ? `missing type (one of ${MESSAGE_TYPES.join(", ")})`
      : `expected one of ${MESSAGE_TYPES.join(", ")} (got ${JSON.stringify(issue.input)})`,
});

/**
 * A JSON object, checked but not copied: z.record would rebuild every properties, traits and
 * context object key by key, a cost that showed in replay's profile.
 */
const jsonObject = custom<Record<string, unknown>>(isJsonObject, {
  error: (issue) => `Invalid input: expected object, received ${issue.input === null ? "null" : Array.isArray(issue.input) ? "array" : typeof issue.input}`,
});
const optionalId = nullish(string());

/**
 * A Segment-spec message as a caller writes it or Segment holds it (flags, NDJSON lines, library
 * calls): the fields wh reads are checked; any others (receivedAt, channel, _metadata, …) pass.
 */
const inboundMessage = looseObject({
  type: messageType,
  version: optional(number()),
  userId: optionalId,
  anonymousId: optionalId,
  event: optional(string()),
  // Segment's SDKs send null for what the app did not give (analytics-python: page name and
  // category, anonymousId, userId): the tracking API takes null as absent, so wh does too.
  name: nullish(string()),
  category: nullish(string()),
  properties: nullish(jsonObject),
  traits: nullish(jsonObject),
  groupId: optional(string()),
  previousId: optional(string()),
  context: nullish(jsonObject),
  integrations: nullish(jsonObject),
  timestamp: nullish(string()),
  messageId: nullish(nonEmptyString()),
});
export type InboundMessage = z.infer<typeof inboundMessage.schema>;
export const parseInboundMessage = withFastPath(inboundMessage);

const stringFields = <const K extends string>(...keys: K[]) =>
  looseObject(Object.fromEntries(keys.map((key) => [key, nullish(string())])) as Record<K, typeof optionalId>);

const PAGE_PROPERTY_STRINGS = ["path", "referrer", "title", "url"] as const;
const SCREEN_CONTEXT_STRINGS = { device: ["model", "type"], os: ["name", "version"], app: ["build", "name", "version"] } as const;

/** The seed's recognised page properties and screen context fields, all strings when present. */
const pageProperties = stringFields(...PAGE_PROPERTY_STRINGS);
const screenContext = looseObject({
  device: nullish(stringFields(...SCREEN_CONTEXT_STRINGS.device)),
  os: nullish(stringFields(...SCREEN_CONTEXT_STRINGS.os)),
  app: nullish(stringFields(...SCREEN_CONTEXT_STRINGS.app)),
});
export const parsePageProperties = withFastPath(pageProperties);
export const parseScreenContext = withFastPath(screenContext);

/**
 * The dotted paths, per message type and field, that the schema holds to be strings: a flag such
 * as `--prop path=5` keeps its value as text there instead of reading it as JSON.
 */
export function stringFieldPaths(type: MessageType, field: "properties" | "context" | "traits"): ReadonlySet<string> {
  if (type === "page" && field === "properties") return new Set(PAGE_PROPERTY_STRINGS);
  if (type === "screen" && field === "context")
    return new Set(Object.entries(SCREEN_CONTEXT_STRINGS).flatMap(([group, keys]) => keys.map((key) => `${group}.${key}`)));
  return new Set();
}

/** A message already in the classic outbound shape (a capture from `wh listen`, say). */
const outboundMessage = looseObject({
  version: optional(literal(1)),
  type: messageType,
  userId: optionalId,
  anonymousId: optionalId,
  event: optional(string()),
  name: optional(string()),
  properties: optional(jsonObject),
  traits: optional(jsonObject),
  groupId: optional(string()),
  context: optional(jsonObject),
  integrations: optional(jsonObject),
  "Previous ID": optional(string()),
  "User ID": optional(string()),
  timestamp: string(),
  messageId: optional(string()),
});
export const parseOutboundMessage = withFastPath(outboundMessage);

/** Each message schema, with its check, for the test that holds the two to the same answers. */
export const CHECKED_SCHEMAS = { inboundMessage, outboundMessage, pageProperties, screenContext };

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
