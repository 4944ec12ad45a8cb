import type { TransportResult } from "../core/deliver.js";
import { ABORTED } from "./transport-errors.js";

/** What the sweeper and the abort listener need of a request under way. */
export interface InFlightRequest {
  readonly deadlineMs: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** Its place among the requests under way (InFlightRequests' own), -1 when it is not among them. */
  inFlightSlot: number;
  /** Ends the attempt with this result, whatever undici does next. */
  stop(result: TransportResult): void;
}

/** How often deadlines are checked: a timeout fires at most this late. */
const SWEEP_EVERY_MS = 25;

/**
 * The requests under way: one interval timer stops those past their deadline, and one listener
 * per abort signal stops those the caller cancels (instead of a timer, an AbortController and a
 * listener per request, which showed in replay's profile).
 *
 * Both are taken down by the sweep that finds them idle, not when the last request ends: one
 * user's events sent one at a time (an ordered replay's hot user) empty the set at every answer,
 * and set up an interval, a group and an abort listener again for the next request, ~4% of such
 * a replay's CPU. An idle process has no timer after a sweep (SWEEP_EVERY_MS).
 *
 * The requests are kept in an array, each knowing its place, not in a Set: a Set that gains and
 * loses an entry per request rebuilds its table every few dozen requests, and a table the collector
 * had moved to the old generation kept, once dropped, every request it had listed (each holding
 * undici's request, its headers and body) alive through young collections until the next full one.
 * Replaying 50,000 events, 64 at a time: 50 MB promoted and 6-7 full collections, against 16 MB
 * and 2 with the array (`node --trace-gc-nvp`).
 */
export class InFlightRequests {
  private readonly requests: InFlightRequest[] = [];
  /** For each signal, how many requests under way have it, and its listener. */
  private readonly bySignal = new Map<AbortSignal, { count: number; onAbort: () => void }>();
  private sweeper: NodeJS.Timeout | undefined;
  /** Answers not yet handed to their callers: resolve, result, resolve, result, … */
  private answers: unknown[] = [];

  /**
   * Hands a result to its caller once undici has made the connection available again, so that
   * the caller's next request reuses it. undici does that in a setImmediate it queues when it ends
   * a request, after our handler has returned. The answers of one turn of the event loop are
   * gathered, and handed over two setImmediates later: the first runs in the same check phase as
   * undici's, and may come before some of them; the second runs in the next turn, after all.
   * Heard at once, the next request found every connection still busy and opened one more: 817
   * connections for --concurrency 512, 101 for 64, and 2-9% more CPU per event. One deferral per
   * answer (a microtask, then a setImmediate) cost 1.3 KB of the 14 KB replay allocated per event.
   */
  answer(resolve: (result: TransportResult) => void, result: TransportResult): void {
    if (this.answers.length === 0) setImmediate(sealAnswers, this);
    this.answers.push(resolve, result);
  }

  /** The answers gathered so far, for the next turn; later ones gather anew. */
  takeAnswers(): unknown[] {
    const answers = this.answers;
    this.answers = [];
    return answers;
  }

  add(request: InFlightRequest): void {
    request.inFlightSlot = this.requests.length;
    this.requests.push(request);
    let group = this.bySignal.get(request.signal);
    if (group === undefined) {
      const { signal } = request;
      const onAbort = (): void => this.stopEach((each) => (each.signal === signal ? ABORTED : undefined));
      group = { count: 0, onAbort };
      this.bySignal.set(signal, group);
      signal.addEventListener("abort", onAbort, { once: true });
    }
    group.count += 1;
    // Unreferenced: it outlives the last request by up to a sweep, and must not hold the process
    // (a `wh send` exits at its answer). A request in flight holds it by its socket.
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_EVERY_MS).unref();
  }

  /** Takes a request out (once: a second call does nothing); the last one takes its place. */
  remove(request: InFlightRequest): void {
    const slot = request.inFlightSlot;
    if (slot < 0 || this.requests[slot] !== request) return;
    const last = this.requests.pop() as InFlightRequest;
    if (last !== request) {
      this.requests[slot] = last;
      last.inFlightSlot = slot;
    }
    request.inFlightSlot = -1;
    const group = this.bySignal.get(request.signal);
    if (group !== undefined) group.count -= 1;
  }

  /**
   * Stops each request `resultFor` gives a result for. From the last to the first: a request
   * stopped leaves at once or later, and one leaving takes the last one's place, already seen.
   */
  private stopEach(resultFor: (request: InFlightRequest) => TransportResult | undefined): void {
    for (let index = this.requests.length - 1; index >= 0; index -= 1) {
      const request = this.requests[index] as InFlightRequest | undefined;
      const result = request === undefined ? undefined : resultFor(request);
      if (result !== undefined) request?.stop(result);
    }
  }

  private sweep(): void {
    const nowMs = Date.now();
    this.stopEach((request) =>
      request.deadlineMs <= nowMs ? { kind: "error", code: "timeout", message: `no response within ${request.timeoutMs}ms` } : undefined,
    );
    for (const [signal, group] of this.bySignal) {
      if (group.count > 0) continue;
      signal.removeEventListener("abort", group.onAbort);
      this.bySignal.delete(signal);
    }
    // Idle: no timer keeps the process (or an idle `wh serve`) awake.
    if (this.requests.length === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

function sealAnswers(inFlight: InFlightRequests): void {
  setImmediate(handAnswers, inFlight.takeAnswers());
}

function handAnswers(answers: unknown[]): void {
  for (let index = 0; index < answers.length; index += 2) (answers[index] as (result: TransportResult) => void)(answers[index + 1] as TransportResult);
}
