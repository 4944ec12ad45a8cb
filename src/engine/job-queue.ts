import type { DeliveryJob } from "./delivery-job.js";

/**
 * A live input for the runner: batches of jobs pushed as they arrive (`wh serve` pushes each
 * accepted request's events once they are on disk), read as an async iterable until `end()`.
 */
export class JobQueue implements AsyncIterable<readonly DeliveryJob[]> {
  private batches: DeliveryJob[][] = [];
  private waiting: (() => void) | undefined;
  private ended = false;

  push(jobs: DeliveryJob[]): void {
    if (this.ended || jobs.length === 0) return;
    this.batches.push(jobs);
    this.wake();
  }

  /** No more jobs: the runner finishes what it holds and returns. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<readonly DeliveryJob[]> {
    for (;;) {
      if (this.batches.length > 0) {
        // Everything that arrived meanwhile, as one batch: the runner takes it in one turn.
        const batch = this.batches.length === 1 ? (this.batches[0] as DeliveryJob[]) : this.batches.flat();
        this.batches = [];
        yield batch;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }
}
