import { describeOutcome } from "../deliver.js";
import { formatDurationMs } from "../duration.js";
import type { AttemptOutcome } from "../retry-policy.js";
import type { BuiltCase } from "./cases.js";

/** One request's answer and how long it took. */
export interface Observation {
  outcome: AttemptOutcome;
  ms: number;
}

/** pass; fail (a required case failed); warn (an advisory one did); skip (not sent, with why). */
export type CaseOutcome = "pass" | "fail" | "warn" | "skip";

export interface CaseResult {
  name: string;
  required: boolean;
  expect: "accept" | "refuse";
  outcome: CaseOutcome;
  /** Why it failed, warned or was skipped, in a person's words (the receiver's text neutralised). */
  reason?: string | undefined;
  /** What the developer should look at even when it passed. */
  note?: string | undefined;
  /** The status of the answer that decided the case, when there was one. */
  status?: number | undefined;
  /** The slowest request of the case (its only one, mostly). */
  latencyMs?: number | undefined;
  /** Over the burst. */
  p50Ms?: number | undefined;
  p99Ms?: number | undefined;
  messageIds: readonly string[];
}

/** What the results come to: exit 1 when a required case failed. */
export interface CheckSummary {
  passed: number;
  failed: number;
  warned: number;
  skipped: number;
  exitCode: 0 | 1;
}

/**
 * Grades one case from its answers: each request of an accept case must be answered 2xx within
 * the time allowed, each of a refuse case with a 4xx. `probe` is the answer to the case's probe,
 * when it was sent. `timeoutMs` is the time allowed (Segment's 5 s).
 */
export function gradeCase(built: BuiltCase, observations: readonly Observation[], probe: Observation | undefined, timeoutMs: number): CaseResult {
  const { definition, messageIds } = built;
  const base = { name: definition.name, required: definition.required, expect: definition.expect, messageIds };
  if (built.skip !== undefined) return { ...base, outcome: "skip", reason: built.skip };
  const latencyMs = Math.max(...observations.map((each) => Math.round(each.ms)));
  const timing = built.concurrency === undefined ? {} : burstTiming(observations);
  const { note } = built;
  const failing = observations.find((each) => !meets(definition.expect, each.outcome));
  const decisive = failing ?? observations[observations.length - 1];
  const status = decisive?.outcome.kind === "response" ? decisive.outcome.status : undefined;
  const graded = { ...base, latencyMs, status, ...timing, ...(note === undefined ? {} : { note }) };
  if (failing === undefined) return { ...graded, outcome: "pass" };
  const reason =
    definition.expect === "refuse"
      ? refusalFailure(failing.outcome, definition.acceptedMeans ?? "accepted a request it must refuse", timeoutMs)
      : (probeAccepted(failing, probe, built.probe?.acceptedMeans) ?? acceptFailure(failing.outcome, messageIds[0], timeoutMs));
  const count = observations.filter((each) => !meets(definition.expect, each.outcome)).length;
  const counted = observations.length > 1 && count > 1 ? `${count} of ${observations.length} requests failed; the first: ${reason}` : reason;
  return { ...graded, outcome: definition.required ? "fail" : "warn", reason: counted };
}

/** Whether a case's probe is worth sending: its first request, Segment's exact bytes, was refused with a 4xx. */
export function wantsProbe(first: Observation): boolean {
  return meets("refuse", first.outcome);
}

/**
 * Why the receiver cannot be reached at all, when every request of a case failed to connect
 * (refused, DNS, an untrusted certificate): the cases after it would only fail the same way.
 */
export function unreachableReason(observations: readonly Observation[]): string | undefined {
  const first = observations[0]?.outcome;
  const unreachable = (outcome: AttemptOutcome) => outcome.kind === "error" && (outcome.code === "connection" || outcome.code === "tls");
  if (first === undefined || !observations.every((each) => unreachable(each.outcome))) return undefined;
  return `not sent: the receiver could not be reached (${describeOutcome(first)})`;
}

/** The summary of every case's result. */
export function summarize(results: readonly CaseResult[]): CheckSummary {
  const count = (outcome: CaseResult["outcome"]) => results.filter((result) => result.outcome === outcome).length;
  const failed = count("fail");
  return { passed: count("pass"), failed, warned: count("warn"), skipped: count("skip"), exitCode: failed > 0 ? 1 : 0 };
}

function meets(expect: "accept" | "refuse", outcome: AttemptOutcome): boolean {
  if (outcome.kind !== "response") return false;
  return expect === "accept" ? outcome.status >= 200 && outcome.status < 300 : outcome.status >= 400 && outcome.status < 500;
}

/** Why an event Segment would send failed, and what it would cost in production. */
function acceptFailure(outcome: AttemptOutcome, messageId: string | undefined, timeoutMs: number): string {
  const limit = formatDurationMs(timeoutMs);
  if (outcome.kind === "error") {
    if (outcome.code !== "timeout") return `no answer: ${describeOutcome(outcome)}`;
    const which = messageId === undefined ? "this event" : `messageId ${messageId}`;
    return `no answer within ${limit}: Segment gives up at ${limit} and sends the event again, so your receiver would get ${which} twice or more (a duplicate for every retry until it answers in time)`;
  }
  const { status } = outcome;
  const said = describeOutcome(outcome);
  if (status >= 500) return `crashed (${said}): Segment retries a 5xx for up to 4 hours, then drops the event`;
  if (status === 401 || status === 403)
    return `refused it (${said}): a correctly signed event was refused; is the receiver's secret the one given to wh check? Segment does not retry a 4xx: the event would be lost`;
  if (status >= 400) return `refused it (${said}): Segment does not retry a 4xx: the event would be lost`;
  if (status >= 300) return `answered ${said}: Segment does not follow redirects: the event would be lost`;
  return `answered ${said}, not a 2xx`;
}

/** Why a request that must be refused was not refused with a 4xx. */
function refusalFailure(outcome: AttemptOutcome, acceptedMeans: string, timeoutMs: number): string {
  if (outcome.kind === "error") {
    if (outcome.code === "timeout") return `no answer within ${formatDurationMs(timeoutMs)}: refuse a request that fails verification at once, with a 4xx`;
    return `no answer: ${describeOutcome(outcome)}`;
  }
  const said = describeOutcome(outcome);
  if (outcome.status >= 200 && outcome.status < 300) return `${acceptedMeans} (${said})`;
  if (outcome.status >= 500) return `crashed instead of refusing (${said}): answer a 4xx such as 401 to a request whose signature does not match`;
  return `answered ${said} instead of refusing with a 4xx (401)`;
}

/**
 * What the receiver verifies, when it refused the case's request but accepted its probe (the
 * same content signed another way): JSON.stringify(req.body), or a batch's whole body.
 */
function probeAccepted(failing: Observation, probe: Observation | undefined, acceptedMeans: string | undefined): string | undefined {
  if (acceptedMeans === undefined || !wantsProbe(failing) || probe === undefined || !meets("accept", probe.outcome)) return undefined;
  return `refused the exact bytes (${describeOutcome(failing.outcome)}) but accepted ${acceptedMeans}`;
}

/** The median and p99 latency over the burst (nearest rank). */
function burstTiming(observations: readonly Observation[]): { p50Ms: number; p99Ms: number } {
  const sorted = observations.map((each) => each.ms).sort((a, b) => a - b);
  const rank = (percent: number) => Math.round(sorted[Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1)] ?? 0);
  return { p50Ms: rank(50), p99Ms: rank(99) };
}
