import { UsageError } from "../../core/errors.js";
import { normalizeTimestamp } from "../../core/message/timestamp.js";
import { findSample, SAMPLE_NAMES } from "../../core/samples/catalogue.js";
import { SPEC_NAMES, type Sample } from "../../core/samples/types.js";
import { closest } from "../wiring/suggest.js";
import { oneOf, wholeNumber } from "./parsers.js";
import { flag, flagTable } from "./spec.js";

/** The flags of `wh samples` and `wh samples generate`, and `wh send --sample` (see tables.ts: declared once, as data). */

/** A catalogue event by name, any case; a mistyped one is refused with the nearest name. */
function sampleName(text: string, flagName: string): Sample {
  const found = findSample(text);
  if (found !== undefined) return found;
  const guess = closest(text, SAMPLE_NAMES);
  throw new UsageError(`${flagName}: no sample is named ${JSON.stringify(text)}${guess === undefined ? "" : ` (did you mean ${JSON.stringify(guess)}?)`}`, {
    hint: "wh samples lists them",
  });
}

/** An ISO 8601 time, in ms since the epoch. */
function time(text: string, flagName: string): number {
  const normalized = normalizeTimestamp(text);
  if (normalized === undefined) throw new UsageError(`${flagName} ${JSON.stringify(text)}: expected an ISO 8601 time such as 2026-11-01T09:00:00Z`);
  return Date.parse(normalized);
}

export const sendSample = flag({
  syntax: "--sample <name>",
  description: "start from this catalogue event (wh samples): its type, fields and values; the other flags override them",
  parse: sampleName,
  complete: SAMPLE_NAMES,
});

export const samplesFlags = flagTable({
  spec: flag({
    syntax: "--spec <spec>",
    description: `only this part of Segment's Spec: ${SPEC_NAMES.join(", ")}`,
    parse: oneOf(SPEC_NAMES),
    complete: SPEC_NAMES,
  }),
});

export const generateFlags = flagTable({
  users: flag({
    syntax: "--users <n>",
    description: "people visiting (memory grows with them, not with --events)",
    default: "100",
    parse: wholeNumber(1, 1_000_000),
  }),
  events: flag({ syntax: "--events <n>", description: "messages to write in all", default: "1000", parse: wholeNumber(1, 1_000_000_000) }),
  seed: flag({
    syntax: "--seed <n>",
    description: "the same seed writes the same lines, byte for byte (default: a random one, printed on stderr)",
    parse: wholeNumber(0, 4_294_967_295),
  }),
  start: flag({ syntax: "--start <iso8601>", description: "when the first visits start", default: "2026-11-01T00:00:00Z", parse: time }),
  out: flag({ syntax: "--out <file>", description: "write the NDJSON to FILE (replaced) instead of standard output", complete: "file" }),
});
