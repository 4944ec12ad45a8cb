export interface OrderedPoolOptions {
  /** Tasks running at once. */
  concurrency: number;
  /** When true, tasks with the same key run one after another, in submission order. */
  ordered: boolean;
  /** Tasks held at once, running or waiting (bounds memory whatever the input's size). */
  maxQueued: number;
}

interface Task {
  key: string | undefined;
  /** Submission order: of the tasks that may start, the earliest submitted starts first. */
  seq: number;
  run: () => Promise<void>;
}

/**
 * Runs tasks with bounded concurrency while keeping each key's tasks in submission order: a task
 * does not start before the previous task of its key has settled. `submit` waits while the pool
 * is full, which is the back-pressure that keeps a reader from outrunning the network.
 */
export class OrderedPool {
  private running = 0;
  private held = 0;
  private readonly ready = new TaskHeap();
  private nextSeq = 0;
  /** Keys with a task running or waiting; the value holds the tasks queued behind it. */
  private readonly busyKeys = new Map<string, Task[]>();
  private waiters: (() => void)[] = [];
  private cancelled = false;
  private failure: { error: unknown } | undefined;

  constructor(private readonly options: OrderedPoolOptions) {}

  /**
   * Queues a task once there is room for it (not when it has run): true when queued, false when
   * the pool was cancelled meanwhile and the task will not run. A promise only when it must wait.
   */
  submit(key: string | undefined, run: () => Promise<void>): boolean | Promise<boolean> {
    // No promise when there is room: on the hot path of replay that is one await per event saved.
    return this.held < this.options.maxQueued || this.cancelled ? this.enqueue(key, run) : this.submitWhenRoom(key, run);
  }

  private async submitWhenRoom(key: string | undefined, run: () => Promise<void>): Promise<boolean> {
    while (this.held >= this.options.maxQueued && !this.cancelled) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.enqueue(key, run);
  }

  private enqueue(key: string | undefined, run: () => Promise<void>): boolean {
    if (this.cancelled) return false;
    this.held += 1;
    const task: Task = { key, seq: this.nextSeq++, run };
    if (this.options.ordered && key !== undefined) {
      const queue = this.busyKeys.get(key);
      if (queue !== undefined) {
        queue.push(task);
        return true;
      }
      this.busyKeys.set(key, []);
    }
    this.ready.push(task);
    this.pump();
    return true;
  }

  /** Resolves when every submitted task has settled (or was dropped); rethrows a task's throw. */
  async drain(): Promise<void> {
    while (this.held > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    if (this.failure !== undefined) throw this.failure.error;
  }

  /** Drops every task that has not started yet; running tasks go on. Returns how many were dropped. */
  cancelWaiting(): number {
    this.cancelled = true;
    let dropped = this.ready.clear();
    for (const queue of this.busyKeys.values()) dropped += queue.length;
    this.busyKeys.clear();
    this.held -= dropped;
    this.wake();
    return dropped;
  }

  private pump(): void {
    while (this.running < this.options.concurrency) {
      const task = this.ready.pop();
      if (task === undefined) return;
      this.start(task);
    }
  }

  private start(task: Task): void {
    this.running += 1;
    // Tasks report their outcomes themselves; a throw is a bug, kept for drain() to rethrow.
    task.run().then(
      () => this.settle(task),
      (error: unknown) => {
        this.failure ??= { error };
        this.settle(task);
      },
    );
  }

  private settle(task: Task): void {
    this.running -= 1;
    this.held -= 1;
    if (task.key !== undefined && this.busyKeys.has(task.key)) {
      const queue = this.busyKeys.get(task.key) as Task[];
      const next = queue.shift();
      if (next === undefined) this.busyKeys.delete(task.key);
      else this.ready.push(next);
    }
    this.pump();
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** A binary min-heap of tasks by submission order. */
class TaskHeap {
  private readonly items: Task[] = [];

  push(task: Task): void {
    const items = this.items;
    items.push(task);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if ((items[parent] as Task).seq <= task.seq) break;
      items[index] = items[parent] as Task;
      index = parent;
    }
    items[index] = task;
  }

  pop(): Task | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && (items[right] as Task).seq < (items[left] as Task).seq ? right : left;
      if ((items[child] as Task).seq >= last.seq) break;
      items[index] = items[child] as Task;
      index = child;
    }
    items[index] = last;
    return top;
  }

  /** Empties the heap; returns how many tasks it held. */
  clear(): number {
    const count = this.items.length;
    this.items.length = 0;
    return count;
  }
}
