/**
 * The fields of the Webhooks (Actions) destination's Send action, as Segment declares them
 * (action-destinations packages/destination-actions/src/destinations/webhook/send/index.ts):
 * what a subscription's `settings` is validated against, and the defaults of the fields it leaves
 * out. Only the data of the definition is here, never its code; test-packages/frameworks/webhook-oracle.test.ts
 * holds it equal to the published package's.
 */
export const SEND_FIELDS = {
  url: { label: "URL", description: "URL to deliver data to.", type: "string", required: true, format: "uri" },
  method: {
    label: "Method",
    description: "HTTP method to use.",
    type: "string",
    choices: [
      { label: "POST", value: "POST" },
      { label: "PUT", value: "PUT" },
      { label: "PATCH", value: "PATCH" },
    ],
    default: "POST",
    required: true,
  },
  batch_size: {
    label: "Batch Size",
    description: "Maximum number of events to include in each batch. Actual batch sizes may be lower.",
    type: "number",
    required: false,
    default: 0,
  },
  headers: {
    label: "Headers",
    description: "HTTP headers to send with each request. Only ASCII characters are supported.",
    type: "object",
    defaultObjectUI: "keyvalue:only",
  },
  data: { label: "Data", description: "Payload to deliver to webhook URL (JSON-encoded).", type: "object", default: { "@path": "$." } },
  batch_keys: {
    label: "Batch Keys",
    description: "The mapping keys to batch events together by.",
    type: "string",
    multiple: true,
    required: false,
    unsafe_hidden: true,
    default: ["url", "method", "headers"],
  },
} as const;

/** The settings a subscription may hold: the Send action's fields, and Segment's batching switch. */
export const SEND_SETTINGS = [...Object.keys(SEND_FIELDS), "enable_batching"] as const;

/** Each field's default, for the fields a subscription's settings leave out (as Segment fills them in). */
export function sendDefaults(): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(SEND_FIELDS)) if ("default" in field) defaults[name] = structuredClone(field.default);
  return defaults;
}

/**
 * Events per batch request when batching is on and batch_size is 0 or absent, and the most
 * allowed (segment-docs connections/destinations/catalog/actions-webhook, "Batch size limits").
 */
export const DEFAULT_SEND_BATCH_SIZE = 1_000;
export const MAX_SEND_BATCH_SIZE = 4_000;

/** What the Send action's mapping resolves to for one event (after Segment's schema validation). */
export interface SendPayload {
  url: string;
  method: "POST" | "PUT" | "PATCH";
  headers?: Record<string, unknown> | undefined;
  data?: unknown;
  batch_size?: number | undefined;
  batch_keys?: string[] | undefined;
}
