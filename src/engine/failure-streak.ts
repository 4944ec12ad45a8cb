import type { DeliveryReport } from "../core/deliver.js";
import { describeTargets, failureKey } from "../core/delivery-record.js";
import type { DeliveryJob, JobOutcome } from "./delivery-job.js";

/** Why a run stopped on its own: that many identical final failures, or invalid lines, in a row, and what they were. */
export interface FailureStop {
  /** `failed`: the receiver answered each the same way; `invalid`: the input's lines were refused for the same reason. */
  outcome: "failed" | "invalid";
  failures: number;
  /** Each URL's last answer or error, as the failure lines say it; an invalid line's reason. */
  reason: string;
  /** The line the streak began at (a sync's job number). */
  firstLine: number;
  /**
   * Every URL answered 404, 405 or 410 (Gone, once its retries were over): a path typo far more
   * often than a receiver that is down, so the way on is another --url, not a resume.
   */
  wrongPath: boolean;
}

/** The answers that say the URL names nothing there: the path, not the receiver, is what to fix. */
const WRONG_PATH_STATUSES = new Set([404, 405, 410]);

/** One streak: what its events had in common, how many, and where it began. */
class Streak {
  private key: string | undefined;
  private count = 0;
  private firstLine = 0;

  constructor(private readonly limit: number) {}

  end(): void {
    this.key = undefined;
    this.count = 0;
  }

  /** One more event ending `key`'s way; true when the streak has just reached the limit. */
  add(key: string, line: number): boolean {
    if (key !== this.key) {
      this.key = key;
      this.count = 0;
      this.firstLine = line;
    }
    this.count += 1;
    return this.count === this.limit;
  }

  stop(outcome: FailureStop["outcome"], reason: string, wrongPath: boolean): FailureStop {
    return { outcome, failures: this.count, reason, firstLine: this.firstLine, wrongPath };
  }
}

/**
 * Counts the identical final failures in a row and the identical invalid lines in a row
 * (--max-failures counts both, separately). A path typo fails every event the same way, and a
 * renamed key makes every line invalid the same way: better to stop at the limit than to
 * dead-letter the whole file. Failures are counted as deliveries end: a delivered event ends
 * their streak, a different failure starts a new one, invalid and skipped lines leave it as it
 * is. Invalid lines are counted in the input's order, as they are read: any line that is not
 * invalid (`read` with a valid line) ends their streak, a different reason starts a new one,
 * and failures leave it as it is.
 */
export class FailureStreak {
  private readonly failures: Streak | undefined;
  private readonly invalid: Streak | undefined;
  /** Set once, when a streak reaches the limit. */
  stop: FailureStop | undefined;

  /** `limit` 0 or absent: never stop. */
  constructor(limit: number | undefined) {
    if (limit === undefined || limit === 0) return;
    this.failures = new Streak(limit);
    this.invalid = new Streak(limit);
  }

  /** A line was read that is not invalid: a streak of invalid lines ends. */
  readValid(): void {
    this.invalid?.end();
  }

  /** A job ended; true when it is the one that reaches the limit. */
  note(job: DeliveryJob, outcome: JobOutcome, report: DeliveryReport | undefined, reason?: string): boolean {
    if (outcome === "delivered") this.failures?.end();
    if (outcome === "invalid" && this.invalid !== undefined) {
      const text = String(reason);
      return this.invalid.add(text, job.number) && this.stopWith(this.invalid.stop("invalid", text, false));
    }
    if (outcome !== "failed" || report === undefined || this.failures === undefined) return false;
    if (!this.failures.add(failureKey(report), job.number)) return false;
    return this.stopWith(this.failures.stop("failed", describeTargets(report), wrongPath(report)));
  }

  private stopWith(stop: FailureStop): boolean {
    if (this.stop !== undefined) return false;
    this.stop = stop;
    return true;
  }
}

function wrongPath(report: DeliveryReport): boolean {
  return report.targets.every((target) => target.last?.kind === "response" && WRONG_PATH_STATUSES.has(target.last.status));
}
