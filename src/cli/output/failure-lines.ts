import type { DeliveryReport } from "../../core/deliver.js";
import { failureKey } from "../../core/delivery-record.js";
import { untrusted } from "../../core/untrusted.js";
import type { DeliveryJob } from "../../engine/delivery-job.js";
import type { Output } from "./render.js";

/** How often a terminal's count line is rewritten at most (the spinner's pace). */
const REWRITE_EVERY_MS = 100;
/** Off a terminal, how often a growing group says its count, unless the io says otherwise. */
const COUNT_EVERY_MS = 5_000;

interface Group {
  key: string;
  outcome: "invalid" | "failed";
  count: number;
  firstLine: number;
  lastLine: number;
  /** Jobs named by line number (a replay), not by a label (a sync's users). */
  numbered: boolean;
  shownCount: number;
  shownAt: number;
  /** Rewrites the count line (in place on a terminal). */
  update: ((line: string) => void) | undefined;
  /** Shows a count held back, when no failure comes to show it (wh serve's groups never end). */
  timer: NodeJS.Timeout | undefined;
}

/** A job's log line, `line 3: failed: reason`; the reason may quote the input line: neutralised. */
export function jobLine(output: Output, job: DeliveryJob, outcome: "invalid" | "failed", reason: string | undefined): string {
  return output.err.red(`${job.label ?? `line ${job.number}`}: ${outcome}: ${untrusted(String(reason))}`);
}

/**
 * The failure lines of a run on stderr. Consecutive failures with the same reason (the same URLs
 * answering the same way: core's failureKey) are one group, and so are consecutive invalid lines
 * with the same reason: its first line is printed whole, then one count line, `✗ 4212 lines
 * failed the same way (lines 3–4214)` (`were invalid`), rewritten in place on a terminal; off
 * one, said again every few seconds while the group grows and once when it ends. A path typo, or
 * a key renamed in every line, makes one such group, not a line per event. A delivered event
 * does not end a group (it prints nothing); a line that fails or is invalid another way does.
 */
export class FailureLines {
  private group: Group | undefined;

  constructor(private readonly output: Output) {}

  /** A job failed, or was invalid: a line of its own, or one more of the group it belongs to. */
  add(job: DeliveryJob, outcome: "invalid" | "failed", report: DeliveryReport | undefined, reason: string | undefined): void {
    const key = `${outcome}\n${report === undefined ? String(reason) : failureKey(report)}`;
    const group = this.group;
    if (group !== undefined && group.key === key) {
      group.count += 1;
      group.firstLine = Math.min(group.firstLine, job.number);
      group.lastLine = Math.max(group.lastLine, job.number);
      const waitMs = group.shownAt + this.everyMs() - Date.now();
      if (waitMs <= 0) this.showCount(group, true);
      else if (group.timer === undefined) {
        group.timer = setTimeout(() => this.showCount(group, true), waitMs);
        group.timer.unref();
      }
      return;
    }
    this.end();
    this.output.log(jobLine(this.output, job, outcome, reason));
    this.group = {
      key,
      outcome,
      count: 1,
      firstLine: job.number,
      lastLine: job.number,
      numbered: job.label === undefined,
      shownCount: 1,
      shownAt: Date.now(),
      update: undefined,
      timer: undefined,
    };
  }

  /** The group ends (another line follows, or the run ended): its last count is said. */
  end(): void {
    const group = this.group;
    this.group = undefined;
    if (group !== undefined && group.count > group.shownCount) this.showCount(group, false);
  }

  /** How often a growing group's count is shown at most: a terminal's line keeps up, a log's lines are few. */
  private everyMs(): number {
    return this.output.interactive ? REWRITE_EVERY_MS : (this.output.timings.progressEveryMs ?? COUNT_EVERY_MS);
  }

  private showCount(group: Group, growing: boolean): void {
    clearTimeout(group.timer);
    group.timer = undefined;
    const lines = group.numbered ? ` (lines ${group.firstLine}–${group.lastLine})` : "";
    const how = group.outcome === "failed" ? "failed" : "were invalid";
    const line = this.output.err.red(`✗ ${group.count} ${group.numbered ? "lines" : "events"} ${how} the same way${growing ? " so far" : ""}${lines}`);
    if (group.update === undefined) group.update = this.output.logLive(line);
    else group.update(line);
    group.shownCount = group.count;
    group.shownAt = Date.now();
  }
}
