import { asCaptureRecord } from "../capture.js";
import { asDeadLetterRecord } from "../dead-letter.js";
import { isJsonObject, parseJson } from "./parse-json.js";

/**
 * The messageId of the event an NDJSON line holds, as prepareLine reads the line: a message's
 * own, a `wh listen --out` capture record's body's, a dead letter's original line's. Undefined
 * when the line holds no event with a string messageId (wh would give it a fresh one).
 */
export function lineMessageId(line: string): string | undefined {
  const parsed = parseJson(line);
  if (!parsed.ok) return undefined;
  const record = asCaptureRecord(parsed.value);
  if (record !== undefined) return lineMessageId(record.body);
  const letter = asDeadLetterRecord(parsed.value);
  if (letter !== undefined) return lineMessageId(letter.original);
  return isJsonObject(parsed.value) && typeof parsed.value.messageId === "string" ? parsed.value.messageId : undefined;
}
