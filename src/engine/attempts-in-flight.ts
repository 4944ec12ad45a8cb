import type { HttpTransport } from "../core/deliver.js";

/** What a run reads of the requests on the wire: how many, how many hang, and when none is left. */
export interface InFlight {
  /** Requests sent and not yet answered. */
  readonly count: number;
  /** Those on the wire for more than `ms` (a receiver that accepted the connection and does not answer). */
  olderThan(ms: number): number;
  /** Calls `listener` each time the last request on the wire ends, until the returned function is called. */
  whenNone(listener: () => void): () => void;
}

/**
 * The attempts of one deliverer that have a request on the wire, with when each started. A
 * delivery is otherwise waiting to retry (asleep) or not started: what tells a Ctrl-C whether
 * anything is worth its grace period, and the progress line that a receiver hangs. Counted at the
 * transport, which every attempt passes through and which answers even when an attempt is aborted.
 * Times are the real clock's: a request takes real time whatever clock paces the retries.
 */
export class AttemptsInFlight implements InFlight {
  // In start order (a Set keeps insertion order), so the oldest come first.
  private readonly started = new Set<{ at: number }>();
  private readonly noneListeners = new Set<() => void>();

  /** The transport, counting its requests here while each is on the wire. */
  watch(transport: HttpTransport): HttpTransport {
    return {
      post: (url, headers, body, options) => {
        const attempt = { at: performance.now() };
        this.started.add(attempt);
        // Not finally(), which makes two more promises per request for the answer to pass through.
        return transport.post(url, headers, body, options).then(
          (result) => {
            this.end(attempt);
            return result;
          },
          (error: unknown) => {
            this.end(attempt);
            throw error;
          },
        );
      },
    };
  }

  get count(): number {
    return this.started.size;
  }

  olderThan(ms: number): number {
    const before = performance.now() - ms;
    let count = 0;
    for (const attempt of this.started) {
      if (attempt.at >= before) break;
      count += 1;
    }
    return count;
  }

  whenNone(listener: () => void): () => void {
    this.noneListeners.add(listener);
    return () => this.noneListeners.delete(listener);
  }

  private end(attempt: { at: number }): void {
    this.started.delete(attempt);
    // Told after the delivery has taken its answer (a turn later): a listener that cuts the run
    // must not make an answer that came back count as cut off. Still none by then, or not at all.
    // Only when someone listens (a run that stops): one user's events, sent one at a time, empty
    // the set at every answer. A listener added later is added while requests are on the wire.
    if (this.started.size === 0 && this.noneListeners.size > 0)
      setImmediate(() => {
        if (this.started.size === 0) for (const listener of [...this.noneListeners]) listener();
      });
  }
}
