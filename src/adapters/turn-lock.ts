/**
 * A lock that threads of one process share (a SharedArrayBuffer), held by a thread from its
 * first `hold()` until the end of the synchronous code it is in: released by a microtask queued
 * when it was taken. What a thread does in one go to files others write too (replay --workers: a
 * recorder's flush, its dead letters, its journal records and a take-back) is so done as one
 * thread would, without any thread waiting on another's event loop. A thread only ever waits
 * for another's few write calls. A thread must not be ended while it holds the lock: one that
 * says it is done in a later step than its last write has let it go.
 */
export class TurnLock {
  private readonly cell: Int32Array;
  private held = false;

  constructor(buffer: SharedArrayBuffer) {
    this.cell = new Int32Array(buffer);
  }

  /** The memory of a new lock, to give each thread that takes it. */
  static memory(): SharedArrayBuffer {
    return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  }

  /** Takes the lock for the rest of this synchronous step, waiting while another thread holds it; held already: nothing. */
  hold(): void {
    if (this.held) return;
    while (Atomics.compareExchange(this.cell, 0, 0, 1) !== 0) Atomics.wait(this.cell, 0, 1);
    this.held = true;
    queueMicrotask(() => {
      this.held = false;
      Atomics.store(this.cell, 0, 0);
      Atomics.notify(this.cell, 0, 1);
    });
  }
}
