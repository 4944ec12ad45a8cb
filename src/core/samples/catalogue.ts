import { B2B_SAAS_SAMPLES } from "./b2b-saas.js";
import { ECOMMERCE_SAMPLES } from "./ecommerce.js";
import { MOBILE_SAMPLES } from "./mobile.js";
import { SEMANTIC_SAMPLES } from "./semantic.js";
import type { Sample, SpecName } from "./types.js";
import { VIDEO_SAMPLES } from "./video.js";

/**
 * The catalogue of Segment's Spec events (`wh samples`, `wh send --sample`, wh check's typed
 * cases): names, properties and types from Segment's Spec pages, values wh's own.
 */
export const SAMPLES: readonly Sample[] = [...ECOMMERCE_SAMPLES, ...B2B_SAAS_SAMPLES, ...VIDEO_SAMPLES, ...MOBILE_SAMPLES, ...SEMANTIC_SAMPLES];

export const SAMPLE_NAMES: readonly string[] = SAMPLES.map((sample) => sample.name);

/** Segment's page for each part of the Spec. */
export const SPEC_PAGES: Readonly<Record<SpecName, string>> = {
  ecommerce: "https://segment.com/docs/connections/spec/ecommerce/v2/",
  "b2b-saas": "https://segment.com/docs/connections/spec/b2b-saas/",
  video: "https://segment.com/docs/connections/spec/video/",
  mobile: "https://segment.com/docs/connections/spec/mobile/",
  semantic: "https://segment.com/docs/connections/spec/semantic/",
};

/** The sample named `name`, ignoring case (names are typed in shells). */
export function findSample(name: string): Sample | undefined {
  const wanted = name.trim().toLowerCase();
  return SAMPLES.find((sample) => sample.name.toLowerCase() === wanted);
}

/** The sample's message, as a fresh copy a caller may change. */
export function sampleMessage(sample: Sample): Record<string, unknown> {
  return structuredClone(sample.message) as Record<string, unknown>;
}

/** The fields a sample fills: its properties or traits, and context.groupId where the Spec puts the account. */
export function filledFields(sample: Sample): string[] {
  const { properties, traits, context } = sample.message as { properties?: object; traits?: object; context?: { groupId?: string } };
  const fields = Object.keys(properties ?? traits ?? {});
  if (context?.groupId !== undefined) fields.push("context.groupId");
  if (sample.type === "alias") fields.push("previousId");
  if (sample.type === "group") fields.push("groupId");
  return fields;
}
