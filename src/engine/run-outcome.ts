import type { OutcomeCounts } from "../adapters/journal.js";
import type { RunSummary } from "./run-deliveries.js";

/** What the whole run came to: this part and the earlier parts of a resumed run. */
export function wholeRunCounts(summary: RunSummary): OutcomeCounts {
  const { earlier } = summary;
  return {
    delivered: earlier.delivered + summary.delivered,
    skipped: earlier.skipped + summary.skipped,
    filtered: earlier.filtered + summary.filtered,
    unmatched: earlier.unmatched + summary.unmatched,
    invalid: earlier.invalid + summary.invalid,
    failed: earlier.failed + summary.failed,
  };
}

/**
 * Whether the run went through its whole input (no Ctrl-C, no write error, no --max-failures
 * stop, nothing cut off): only then is its journal completed, and a --resume has nothing to do.
 */
export function ranToTheEnd(summary: RunSummary | undefined, interrupted: boolean): summary is RunSummary {
  return summary !== undefined && !interrupted && summary.unfinished === 0 && summary.writeError === undefined && summary.stoppedByFailures === undefined;
}

/**
 * The exit code of a run, earlier parts of a resumed run included: 74 when an output file could
 * not be written, 130 after Ctrl-C, 1 when anything was invalid or failed (a run stopped by
 * --max-failures is one), else 0.
 */
export function runExitCode(summary: RunSummary, interrupted: boolean): number {
  if (summary.writeError !== undefined) return 74;
  if (interrupted) return 130;
  const whole = wholeRunCounts(summary);
  return whole.invalid + whole.failed > 0 ? 1 : 0;
}
