import { formatDurationMs } from "../../core/duration.js";
import type { RunProgress } from "../../engine/run-deliveries.js";
import { describeWait, type Output } from "./render.js";

/** How often a run off a terminal logs its progress. */
const PROGRESS_EVERY_MS = 5_000;
/** How long a request may be on the wire before the progress line says it hangs, at most. */
const HANGING_AFTER_MS = 5_000;

/**
 * How long a request is on the wire before the progress line says it hangs: 5 s, or half the
 * attempt's timeout when that is shorter: with the classic 5 s timeout no request lives past 5 s
 * (it times out and waits to retry), and a hanging receiver must show.
 */
export function hangingAfter(output: Output, timeoutMs: number): number {
  return output.timings.hangingAfterMs ?? Math.min(HANGING_AFTER_MS, timeoutMs / 2);
}

/**
 * A spinner with the counts on a TTY; off a TTY, a line on stderr every few seconds at most. It
 * uses the summary's words, and says why deliveries wait (each URL's last answer or error, when
 * its retries end, and that Ctrl-C stops).
 */
export function startProgress(output: Output, progress: () => RunProgress, timeoutMs: number): { stop(): void } {
  if (output.quiet) return { stop: () => undefined };
  const hangingAfterMs = hangingAfter(output, timeoutMs);
  const describe = (): string => describeProgress(progress(), hangingAfterMs, Date.now(), output.keyHints("Ctrl-C stops, resumable"));
  const interactive = output.interactive;
  const timer = setInterval(
    () => (interactive ? void output.spin(describe()) : output.log(describe())),
    interactive ? 100 : (output.timings.progressEveryMs ?? PROGRESS_EVERY_MS),
  );
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      output.stopSpinner();
    },
  };
}

/**
 * The progress line. What was read and what finished are told apart: a whole file read while
 * every event waits to retry is "read 100% · 0 of 5 finished", never "100%".
 */
function describeProgress(progress: RunProgress, hangingAfterMs: number, nowMs: number, keys = "Ctrl-C stops, resumable"): string {
  const { counts, read, total, fractionRead, retrying, inFlight, waiting, startedAt } = progress;
  const elapsedMs = nowMs - startedAt;
  const finished = counts.delivered + counts.failed + counts.invalid + counts.skipped + counts.dryRun;
  const parts: string[] = [];
  if (total === undefined && fractionRead !== undefined) parts.push(`read ${Math.floor(clamp(fractionRead) * 100)}%`);
  parts.push(`${finished} of ${total ?? read} finished`, `${counts.delivered} delivered`, `${counts.failed} failed`, `${counts.invalid} invalid`);
  if (retrying > 0) parts.push(`${retrying} waiting to retry`);
  const hanging = inFlight?.olderThan(hangingAfterMs) ?? 0;
  if (hanging > 0) parts.push(`${hanging} in flight for more than ${formatDurationMs(hangingAfterMs)}`);
  // How far along: the finished share of a known total, else the share of the input read.
  const done = total === undefined ? fractionRead : total === 0 ? 1 : finished / total;
  if (done !== undefined && done > 0.01 && done < 1) parts.push(`ETA ${formatDurationMs((elapsedMs * (1 - done)) / done)}`);
  const rate = elapsedMs > 0 ? Math.round((counts.delivered * 1_000) / elapsedMs) : 0;
  parts.push(`${rate} events/s`, formatDurationMs(elapsedMs));
  if (waiting.length === 0) return parts.join(" · ");
  return `${parts.join(" · ")} · waiting on ${waiting.map((reason) => `${reason.url} → ${describeWait(reason)}`).join("; ")} — ${keys}`;
}

function clamp(fraction: number): number {
  return Math.min(1, Math.max(0, fraction));
}
