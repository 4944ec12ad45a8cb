/**
 * Hands out turns of the event loop, one per iteration (a `setImmediate` each): a caller that
 * waits for its turn before a long synchronous piece of work lets whatever else is ready (the
 * answers to deliveries in flight) run between two such pieces, instead of behind all of them.
 */
export class LoopTurns {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves at the caller's turn, in the order the callers asked. */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}
