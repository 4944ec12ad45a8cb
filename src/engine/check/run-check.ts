import type { HttpTransport } from "../../core/deliver.js";
import type { BuiltCase, CheckRequest } from "../../core/check/cases.js";
import { type CaseResult, gradeCase, type Observation, unreachableReason, wantsProbe } from "../../core/check/grade.js";

export interface CheckRunOptions {
  url: URL;
  transport: HttpTransport;
  /** The time allowed for each whole answer: Segment's 5 s. */
  timeoutMs: number;
  /** Cases, and requests of the burst, in flight at once. */
  concurrency: number;
  /** Aborting stops the run: the cases under way are dropped, not graded. */
  signal: AbortSignal;
  /** Each case's result, in the cases' order, as soon as it and every case before it are graded. */
  onResult?: ((result: CaseResult) => void) | undefined;
}

/**
 * Sends the cases to the receiver and grades each. Every request is one attempt, never retried:
 * a check observes what the receiver answers, and a retry would hide it. Nothing is sent anywhere
 * but `url`. The first case that sends goes first, by itself: a receiver it cannot reach skips the
 * others. Then the independent cases go together, `concurrency` at once, as Segment delivers
 * events side by side (a slow receiver costs about its slowest case, not the sum); last, one by
 * one, the cases that measure latency under their own load.
 */
export async function runCheck(cases: readonly BuiltCase[], options: CheckRunOptions): Promise<CaseResult[]> {
  const graded: (CaseResult | undefined)[] = new Array(cases.length);
  const results: CaseResult[] = [];
  // Once the receiver cannot be reached at all, the cases after are skipped, not failed each alike.
  let unreachable: string | undefined;
  const run = async (index: number): Promise<void> => {
    const built = cases[index] as BuiltCase;
    const ran =
      unreachable === undefined ? await runCase(built, options) : { result: gradeCase({ ...built, skip: unreachable }, [], undefined, options.timeoutMs) };
    // Stopped before every answer: not graded, and no case after it is shown.
    if (ran === undefined) return;
    unreachable ??= ran.unreachable;
    graded[index] = ran.result;
    for (let next = graded[results.length]; next !== undefined; next = graded[results.length]) {
      options.onResult?.(next);
      results.push(next);
    }
  };
  for (const phase of phases(cases)) {
    if (options.signal.aborted) break;
    await inParallel(phase.length, options.concurrency, options.signal, (at) => run(phase[at] as number));
  }
  return results;
}

/** The cases' indexes in the groups that go one after another: the first that sends, the others together, then each alone case. */
function phases(cases: readonly BuiltCase[]): number[][] {
  const first = cases.findIndex((built) => built.skip === undefined);
  const others = cases.map((_, index) => index).filter((index) => index !== first);
  const alone = others.filter((index) => cases[index]?.definition.alone === true);
  const together = others.filter((index) => !alone.includes(index));
  return [first === -1 ? [] : [first], together, ...alone.map((index) => [index])].filter((phase) => phase.length > 0);
}

/** The case's result (and why the receiver cannot be reached, if so); undefined when the run was stopped before every answer. */
async function runCase(built: BuiltCase, options: CheckRunOptions): Promise<{ result: CaseResult; unreachable?: string | undefined } | undefined> {
  const observations = await sendAll(built.requests, built.concurrency ?? 1, options);
  const first = observations[0];
  const probe = built.probe !== undefined && first !== undefined && wantsProbe(first) ? await send(built.probe.request, options) : undefined;
  if (options.signal.aborted) return undefined;
  return { result: gradeCase(built, observations, probe, options.timeoutMs), unreachable: unreachableReason(observations) };
}

/** The requests in their order, `concurrency` of them in flight at once; each observation at its request's index. */
async function sendAll(requests: readonly CheckRequest[], concurrency: number, options: CheckRunOptions): Promise<Observation[]> {
  const observations: Observation[] = new Array(requests.length);
  await inParallel(requests.length, concurrency, options.signal, async (index) => {
    observations[index] = await send(requests[index] as CheckRequest, options);
  });
  return observations;
}

/** Runs task(0) to task(count - 1) in order of start, `concurrency` at once; none starts once `signal` is aborted. */
async function inParallel(count: number, concurrency: number, signal: AbortSignal, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !signal.aborted) {
      const index = next;
      next += 1;
      await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** One attempt, timed from the request's start to the whole answer (or its failure). */
async function send(request: CheckRequest, options: CheckRunOptions): Promise<Observation> {
  const startedAt = performance.now();
  const outcome = await options.transport.post(options.url, request.headers, request.body, {
    signal: options.signal,
    timeoutMs: options.timeoutMs,
    method: request.method,
  });
  return { outcome, ms: performance.now() - startedAt };
}
