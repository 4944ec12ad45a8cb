import type { InputLine } from "../adapters/line-reader.js";
import type { FinishedLines } from "../adapters/journal.js";
import { lineHash } from "../adapters/journal.js";
import { UsageError } from "../core/errors.js";

/**
 * With --resume: drops the lines an earlier part of the run finished, after checking that each
 * is still the line that was finished (its hash). Nothing is passed on until every finished line
 * has been seen and checked, so a changed input stops the run before its first request; the lines
 * in between that were not finished (those in flight at the crash) are held until then, and are
 * few: at most what the run held in its pool.
 */
export async function* skipFinishedLines(
  batches: AsyncIterable<InputLine[]>,
  finished: FinishedLines,
  inputName: string,
  /** Whether the input was cut short on purpose (Ctrl-C while checking): the lines not reached then are no change. */
  cut: () => boolean = () => false,
): AsyncGenerator<InputLine[]> {
  const { lines, hashes } = finished;
  let cursor = 0;
  let held: InputLine[] = [];
  let lastNumber = 0;
  for await (const batch of batches) {
    if (cursor >= lines.length) {
      yield batch;
      continue;
    }
    for (const line of batch) {
      lastNumber = line.number;
      if (cursor < lines.length && line.number === lines[cursor]) {
        if (lineHash(line.text) !== hashes[cursor]) {
          throw new UsageError(
            `--resume: line ${line.number} of ${inputName} is not the line the journal recorded as finished: the input changed since the run began; nothing was sent`,
            {
              hint: "restore the input the run began with, or run without --resume to send it all from the top",
            },
          );
        }
        cursor += 1;
      } else held.push(line);
    }
    if (cursor >= lines.length) {
      yield held;
      held = [];
    }
  }
  if (cursor < lines.length && !cut()) {
    throw new UsageError(
      `--resume: the journal records line ${lines[cursor]} of ${inputName} as finished, but the input has ${lastNumber} lines: it changed since the run began; nothing was sent`,
      {
        hint: "restore the input the run began with, or run without --resume to send it all from the top",
      },
    );
  }
  if (held.length > 0) yield held;
}
