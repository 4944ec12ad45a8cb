import type { InputLine } from "../adapters/line-reader.js";
import { InputError } from "../core/errors.js";

/**
 * Stops, before anything is sent, on an input that is not NDJSON at all: a JSON array, or one
 * pretty-printed JSON document, would otherwise give one "invalid JSON" per line. Judged by the
 * first line that is not blank.
 */
export async function* requireNdjson(batches: AsyncIterable<InputLine[]>, inputName: string): AsyncGenerator<InputLine[]> {
  let judged = false;
  for await (const batch of batches) {
    if (!judged) {
      const first = batch.find((line) => line.text.trim() !== "");
      if (first !== undefined) {
        judged = true;
        const text = first.text.trim();
        if (text.startsWith("[")) {
          throw new InputError(`${inputName} is not NDJSON (one JSON object per line): line ${first.number} starts a JSON array`, {
            hint: "turn the array into NDJSON first, for instance with  jq -c '.[]' FILE > FILE.ndjson",
          });
        }
        if (text === "{") {
          throw new InputError(`${inputName} is not NDJSON (one JSON object per line): line ${first.number} is "{", the start of pretty-printed JSON`, {
            hint: "put each object on one line first, for instance with  jq -c . FILE > FILE.ndjson",
          });
        }
      }
    }
    yield batch;
  }
}
