import type { InputLine } from "../adapters/line-reader.js";
import type { PrepareResult } from "../core/message/prepare.js";
import type { DeliveryJob } from "./delivery-job.js";

/**
 * The jobs of an NDJSON input, a batch of lines at a time: blank lines are skipped (they keep
 * their numbers), a line the reader could not take (invalid UTF-8, overlong) is invalid, and
 * every other line is prepared by `prepare` (which stamps what a line lacks with the command's
 * clock and ids). `onEnd` runs once the input has ended.
 */
export async function* linesToJobs(
  batches: AsyncIterable<InputLine[]>,
  /** A promise when routing the event to subscriptions (Segment's mapping runs asynchronously). */
  prepare: (text: string) => PrepareResult | Promise<PrepareResult>,
  onEnd?: () => void,
  /** Only the lines this returns true for (a shard's); the others are not this run's. */
  select?: (line: InputLine) => boolean,
): AsyncGenerator<DeliveryJob[]> {
  for await (const lines of batches) {
    const jobs: DeliveryJob[] = [];
    for (const line of lines) {
      if (select !== undefined && !select(line)) continue;
      if (line.problem !== undefined) jobs.push({ number: line.number, original: line.text, prepared: { ok: false, kind: "unreadable", error: line.problem } });
      else if (line.text.trim() !== "") {
        const prepared = prepare(line.text);
        // Only routed lines pay an await: replay's plain lines stay synchronous.
        jobs.push({ number: line.number, original: line.text, prepared: prepared instanceof Promise ? await prepared : prepared });
      }
    }
    yield jobs;
  }
  onEnd?.();
}
