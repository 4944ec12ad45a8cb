import { MESSAGE_TYPES } from "../message/types.js";

/**
 * The names of `wh check`'s cases, in the order they run. Apart from the cases themselves, so that
 * the flag tables (--only, --skip and their completion) do not load the message code and zod.
 */
export const CASE_NAMES = [
  ...MESSAGE_TYPES,
  "signature-wrong",
  "signature-missing",
  "signature-reserialized",
  "signature-body-changed",
  "signature-replayed",
  "unicode",
  "unicode-escaped",
  "large-event",
  "full-context",
  "batch",
  "retry",
  "burst",
] as const;

export type CaseName = (typeof CASE_NAMES)[number];
