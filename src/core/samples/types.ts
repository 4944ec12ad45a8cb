import type { IngestType } from "../message/ingest-message.js";

/**
 * The types Segment's Spec documents for a property or trait. "date" is an ISO-8601 string,
 * "integer" a whole number, "number" any; "array" and "object" are JSON's.
 */
export type FieldType = "string" | "number" | "integer" | "boolean" | "date" | "array" | "object";

/** The Spec's fields of one kind of call, by name: what a sample may fill and with what type. */
export type SpecFields = Readonly<Record<string, FieldType>>;

/** The parts of Segment's Spec the catalogue covers. */
export const SPEC_NAMES = ["ecommerce", "b2b-saas", "video", "mobile", "semantic"] as const;
export type SpecName = (typeof SPEC_NAMES)[number];

/**
 * One event of the catalogue: a Segment-spec message (no messageId or timestamp: sending stamps
 * them) whose properties (track, page, screen) or traits (identify, group) are the Spec's,
 * with invented values.
 */
export interface Sample {
  /** The event name for a track; the call's name (Identify, Page, …) for the others. */
  readonly name: string;
  readonly type: IngestType;
  readonly spec: SpecName;
  /** The Spec's fields for its properties or traits: the types the values follow. */
  readonly fields: SpecFields;
  readonly message: Readonly<Record<string, unknown>>;
}

/** The userId the catalogue's messages carry (wh send --user-id replaces it). */
export const SAMPLE_USER = "user-7f3a21";
/** The anonymousId of the same visitor before they signed up. */
export const SAMPLE_ANONYMOUS = "anon-5c90e4b2";

/** A catalogue track of `spec`: its event, the Spec's fields and the invented properties. */
export function trackSample(
  spec: SpecName,
  fields: SpecFields,
  event: string,
  properties: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Sample {
  return { name: event, type: "track", spec, fields, message: { type: "track", userId: SAMPLE_USER, event, properties, ...extra } };
}
