import type { HttpTransport } from "../../core/deliver.js";
import type { BuiltCase, CheckRequest } from "../../core/check/cases.js";
import { type CaseResult, gradeCase, type Observation, unreachableReason, wantsProbe } from "../../core/check/grade.js";

export interface CheckRunOptions {
  url: URL;
  transport: HttpTransport;
  /** The time allowed for each whole answer: Segment's 5 s. */
  timeoutMs: number;
  /** Aborting stops the run: the case under way is dropped, not graded. */
  signal: AbortSignal;
  /** Each case's result, as soon as it is graded. */
  onResult?: ((result: CaseResult) => void) | undefined;
}

/**
 * Sends the cases to the receiver, one case after another, and grades each. Every request is
 * one attempt, never retried: a check observes what the receiver answers, and a retry would hide
 * it. Nothing is sent anywhere but `url`.
 */
export async function runCheck(cases: readonly BuiltCase[], options: CheckRunOptions): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  // Once the receiver cannot be reached at all, the cases after are skipped, not failed each alike.
  let unreachable: string | undefined;
  for (const built of cases) {
    const ran =
      unreachable === undefined ? await runCase(built, options) : { result: gradeCase({ ...built, skip: unreachable }, [], undefined, options.timeoutMs) };
    if (ran === undefined) break;
    unreachable ??= ran.unreachable;
    options.onResult?.(ran.result);
    results.push(ran.result);
  }
  return results;
}

/** The case's result (and why the receiver cannot be reached, if so); undefined when the run was stopped before every answer. */
async function runCase(built: BuiltCase, options: CheckRunOptions): Promise<{ result: CaseResult; unreachable?: string | undefined } | undefined> {
  const observations = await sendAll(built.requests, built.concurrency ?? 1, options);
  const first = observations[0];
  const probe = built.probe !== undefined && first !== undefined && wantsProbe(first) ? await send(built.probe, options) : undefined;
  if (options.signal.aborted) return undefined;
  return { result: gradeCase(built, observations, probe, options.timeoutMs), unreachable: unreachableReason(observations) };
}

/** The requests in their order, `concurrency` of them in flight at once; each observation at its request's index. */
async function sendAll(requests: readonly CheckRequest[], concurrency: number, options: CheckRunOptions): Promise<Observation[]> {
  const observations: Observation[] = new Array(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length && !options.signal.aborted) {
      const index = next;
      next += 1;
      observations[index] = await send(requests[index] as CheckRequest, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, worker));
  return observations;
}

/** One attempt, timed from the request's start to the whole answer (or its failure). */
async function send(request: CheckRequest, options: CheckRunOptions): Promise<Observation> {
  const startedAt = performance.now();
  const outcome = await options.transport.post(options.url, request.headers, request.body, {
    signal: options.signal,
    timeoutMs: options.timeoutMs,
  });
  return { outcome, ms: performance.now() - startedAt };
}
