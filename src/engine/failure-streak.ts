import type { DeliveryReport } from "../core/deliver.js";
import { describeTargets, failureKey } from "../core/delivery-record.js";
import type { JobOutcome } from "./delivery-job.js";

/** Why a run stopped on its own: that many identical final failures in a row, and what they were. */
export interface FailureStop {
  failures: number;
  /** Each URL's last answer or error, as the failure lines say it. */
  reason: string;
}

/**
 * Counts the identical final failures in a row (--max-failures): a delivered event ends the
 * streak, a different failure starts a new one; invalid and skipped lines, which send nothing,
 * leave it as it is. A path typo fails every event the same way: better to stop at the limit
 * than to dead-letter the whole file.
 */
export class FailureStreak {
  private key: string | undefined;
  private count = 0;
  /** Set once, when the streak reaches the limit. */
  stop: FailureStop | undefined;

  /** `limit` 0 or absent: never stop. */
  constructor(private readonly limit: number | undefined) {}

  /** A job ended; true when it is the failure that reaches the limit. */
  note(outcome: JobOutcome, report: DeliveryReport | undefined): boolean {
    if (outcome === "delivered") {
      this.key = undefined;
      this.count = 0;
    }
    if (outcome !== "failed" || report === undefined || this.limit === undefined || this.limit === 0) return false;
    const key = failureKey(report);
    this.count = key === this.key ? this.count + 1 : 1;
    this.key = key;
    if (this.stop !== undefined || this.count < this.limit) return false;
    this.stop = { failures: this.count, reason: describeTargets(report) };
    return true;
  }
}
