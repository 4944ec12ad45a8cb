import { describeOutcome, type DeliveryReport } from "./deliver.js";

/** The machine-readable form of one delivery, shared by send, replay and the syncs. */
export function deliveryRecord(report: DeliveryReport): Record<string, unknown> {
  return {
    outcome: report.outcome,
    deliveredTo: report.deliveredTo ?? null,
    attempts: report.attempts,
    durationMs: report.durationMs,
    urls: report.targets.map((target) => ({
      url: target.url,
      result: target.result,
      attempts: target.attempts,
      ...(target.last?.kind === "response" ? { status: target.last.status } : {}),
      ...(target.last?.kind === "response" && target.last.location !== undefined ? { location: target.last.location } : {}),
      ...(target.last?.kind === "response" && target.last.body !== undefined ? { body: target.last.body } : {}),
      ...(target.last?.kind === "error" ? { error: target.last.message } : {}),
      ...(target.reason === undefined ? {} : { reason: target.reason }),
    })),
  };
}

/** Each URL's last answer, for a failure line: `http://a/ → HTTP 404; http://b/ → timeout`. */
export function describeTargets(report: DeliveryReport): string {
  return report.targets
    .map((target) => `${target.url} → ${describeOutcome(target.last)}${target.reason === undefined ? "" : ` (${target.reason})`}`)
    .join("; ");
}

/**
 * What makes two failed deliveries the same failure (for grouping them on the terminal and for
 * --max-failures): each URL with its last status, or its last error. Nothing of the event itself
 * (its messageId, its line), nor the answer's body, which may echo the event or a request id.
 */
export function failureKey(report: DeliveryReport): string {
  return report.targets
    .map((target) => {
      const last = target.last;
      return `${target.url} ${last === undefined ? "no answer" : last.kind === "response" ? `HTTP ${last.status}` : last.message}`;
    })
    .join("\n");
}
