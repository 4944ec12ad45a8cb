export interface OrderedPoolOptions {
  /** Tasks running at once. */
  concurrency: number;
  /** When true, tasks with the same key run one after another, in submission order. */
  ordered: boolean;
  /** Tasks held at once, running or waiting (bounds memory whatever the input's size). */
  maxQueued: number;
}

/** A task's ordering keys: none, one (an event's user), or several (a batch of several users' events). */
export type TaskKeys = string | readonly string[] | undefined;

interface Task {
  keys: TaskKeys;
  /** Submission order: of the tasks that may start, the earliest submitted starts first. */
  seq: number;
  run: () => Promise<void>;
  /** How many of its keys still have an earlier task pending. */
  waits: number;
}

/**
 * Runs tasks with bounded concurrency while keeping each key's tasks in submission order: a task
 * does not start before the previous task of each of its keys has settled (a batch holding
 * several users' events waits for all of them). `submit` waits while the pool
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
  submit(keys: TaskKeys, run: () => Promise<void>): boolean | Promise<boolean> {
    // No promise when there is room: on the hot path of replay that is one await per event saved.
    return this.held < this.options.maxQueued || this.cancelled ? this.enqueue(keys, run) : this.submitWhenRoom(keys, run);
  }

  private async submitWhenRoom(keys: TaskKeys, run: () => Promise<void>): Promise<boolean> {
    while (this.held >= this.options.maxQueued && !this.cancelled) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.enqueue(keys, run);
  }

  private enqueue(keys: TaskKeys, run: () => Promise<void>): boolean {
    if (this.cancelled) return false;
    this.held += 1;
    const task: Task = { keys, seq: this.nextSeq++, run, waits: 0 };
    if (this.options.ordered && keys !== undefined) {
      if (typeof keys === "string") this.hold(keys, task);
      else for (const key of keys) this.hold(key, task);
      if (task.waits > 0) return true;
    }
    this.ready.push(task);
    this.pump();
    return true;
  }

  /** Queues the task behind the pending task of `key`, or makes it the key's head. */
  private hold(key: string, task: Task): void {
    const queue = this.busyKeys.get(key);
    if (queue === undefined) this.busyKeys.set(key, []);
    else {
      queue.push(task);
      task.waits += 1;
    }
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
    // A task waiting on several keys is in several queues: count it once.
    const waiting = new Set<Task>();
    for (const queue of this.busyKeys.values()) for (const task of queue) waiting.add(task);
    dropped += waiting.size;
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
    const { keys } = task;
    if (typeof keys === "string") this.release(keys);
    else if (keys !== undefined) for (const key of keys) this.release(key);
    this.pump();
    this.wake();
  }

  /** The next task of `key` becomes its head, and starts once it waits on no other key. */
  private release(key: string): void {
    const queue = this.busyKeys.get(key);
    if (queue === undefined) return;
    const next = queue.shift();
    if (next === undefined) this.busyKeys.delete(key);
    else {
      next.waits -= 1;
      if (next.waits === 0) this.ready.push(next);
    }
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
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
