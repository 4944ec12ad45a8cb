import type { SendPayload } from "./send-action.js";

/**
 * Segment's own engines, as core uses them: FQL (@segment/destination-subscriptions) and
 * mapping-kit with the action's schema validation (@segment/actions-core). Core never loads them:
 * adapters/segment-engines.ts does, only when subscriptions are configured, and passes them in.
 */
export interface SegmentEngines {
  /** Parses an FQL trigger; the error is FQL's own message. */
  compileTrigger(fql: string): { ok: true; matches: (event: unknown) => boolean } | { ok: false; error: string };
  /** mapping-kit's validation of a mapping's directives: one message per problem, none when valid. */
  mappingProblems(mapping: Record<string, unknown>): string[];
  /**
   * Resolves a mapping for one event as the action does before `perform`: mapping-kit's
   * transform, empty values removed, the Send fields' schema checked (Segment's message when not).
   */
  mapEvent(mapping: Record<string, unknown>, event: unknown): Promise<{ ok: true; payload: SendPayload } | { ok: false; error: string }>;
}
