import { describe, expect, it } from "vitest";
import { OrderedPool } from "../../src/core/ordered-pool.js";

interface Gate {
  promise: Promise<void>;
  open(): void;
  fail(error: unknown): void;
}

function gate(): Gate {
  let open!: () => void;
  let fail!: (error: unknown) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Lets every pending promise callback and I/O turn run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A task that records its start and end in `log` and finishes when its gate opens.
 * `running` tracks how many tasks are running at once, and the most ever.
 */
function harness() {
  const log: string[] = [];
  const gates = new Map<string, Gate>();
  const stats = { running: 0, peak: 0 };
  const task = (name: string) => {
    const g = gate();
    gates.set(name, g);
    return async (): Promise<void> => {
      stats.running += 1;
      stats.peak = Math.max(stats.peak, stats.running);
      log.push(`start ${name}`);
      try {
        await g.promise;
      } finally {
        stats.running -= 1;
        log.push(`end ${name}`);
      }
    };
  };
  const open = (name: string): void => {
    const g = gates.get(name);
    if (g === undefined) throw new Error(`no task ${name}`);
    g.open();
  };
  const started = (): string[] => log.filter((entry) => entry.startsWith("start ")).map((entry) => entry.slice(6));
  return { log, stats, task, open, started };
}

describe("OrderedPool", () => {
  it("runs the tasks of one key one at a time, in submission order", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 4, ordered: true, maxQueued: 100 });
    for (const name of ["a1", "a2", "a3"]) await pool.submit("a", h.task(name));
    await settle();
    expect(h.started()).toEqual(["a1"]);

    h.open("a1");
    await settle();
    expect(h.started()).toEqual(["a1", "a2"]);
    h.open("a2");
    await settle();
    h.open("a3");
    await pool.drain();

    expect(h.log).toEqual(["start a1", "end a1", "start a2", "end a2", "start a3", "end a3"]);
  });

  it("never overlaps two tasks of one key when many keys share the pool, whatever order they finish in", async () => {
    const pool = new OrderedPool({ concurrency: 5, ordered: true, maxQueued: 20 });
    const activeKeys = new Set<string>();
    const overlaps: string[] = [];
    const order = new Map<string, number[]>();
    const submitted = new Map<string, number[]>();
    for (let index = 0; index < 120; index += 1) {
      const key = `k${(index * 7) % 6}`;
      submitted.set(key, [...(submitted.get(key) ?? []), index]);
      await pool.submit(key, async () => {
        if (activeKeys.has(key)) overlaps.push(key);
        activeKeys.add(key);
        order.set(key, [...(order.get(key) ?? []), index]);
        // Finish after a varying number of turns so keys interleave differently.
        for (let turn = 0; turn < (index * 13) % 5; turn += 1) await settle();
        activeKeys.delete(key);
      });
    }
    await pool.drain();

    expect(overlaps).toEqual([]);
    expect(order).toEqual(submitted);
  });

  it("runs tasks of different keys at once, up to the concurrency", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 3, ordered: true, maxQueued: 100 });
    for (const name of ["a", "b", "c", "d", "e"]) await pool.submit(name, h.task(name));
    await settle();
    expect(h.started()).toEqual(["a", "b", "c"]);

    h.open("b");
    await settle();
    expect(h.started()).toEqual(["a", "b", "c", "d"]);
    expect(h.stats.running).toBe(3);

    for (const name of ["a", "c", "d", "e"]) h.open(name);
    await pool.drain();
    expect(h.stats.peak).toBe(3);
    expect(h.started()).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("starts the earliest submitted task that may run when a slot frees", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 2, ordered: true, maxQueued: 100 });
    await pool.submit("a", h.task("a1"));
    await pool.submit("b", h.task("b1"));
    await pool.submit("a", h.task("a2"));
    await pool.submit("c", h.task("c1"));
    await settle();

    // b1 ends: a2 still waits for a1, so c1 is the earliest that may run.
    h.open("b1");
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "c1"]);

    h.open("a1");
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "c1", "a2"]);
    h.open("c1");
    h.open("a2");
    await pool.drain();
  });

  it("runs tasks with the same key at once when not ordered", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 3, ordered: false, maxQueued: 100 });
    for (const name of ["a1", "a2", "a3", "a4"]) await pool.submit("a", h.task(name));
    await settle();

    expect(h.started()).toEqual(["a1", "a2", "a3"]);
    for (const name of ["a1", "a2", "a3", "a4"]) h.open(name);
    await pool.drain();
  });

  it("runs tasks without a key side by side even when ordered", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 2, ordered: true, maxQueued: 100 });
    await pool.submit(undefined, h.task("x"));
    await pool.submit(undefined, h.task("y"));
    await settle();

    expect(h.started()).toEqual(["x", "y"]);
    h.open("x");
    h.open("y");
    await pool.drain();
  });

  it("makes submit wait while maxQueued tasks are held, running or waiting", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 1, ordered: true, maxQueued: 2 });
    expect(await pool.submit("a", h.task("a1"))).toBe(true);
    expect(await pool.submit("b", h.task("b1"))).toBe(true);
    let third: boolean | undefined;
    const submitted = Promise.resolve(pool.submit("c", h.task("c1"))).then((accepted) => (third = accepted));
    await settle();
    expect(third).toBeUndefined();

    h.open("a1");
    await submitted;
    expect(third).toBe(true);
    h.open("b1");
    await settle();
    h.open("c1");
    await pool.drain();
    expect(h.started()).toEqual(["a1", "b1", "c1"]);
  });

  it("cancelWaiting drops the tasks that have not started, returns their count, and lets running ones finish", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 2, ordered: true, maxQueued: 5 });
    await pool.submit("a", h.task("a1"));
    await pool.submit("b", h.task("b1"));
    await pool.submit("a", h.task("a2")); // waits behind a1
    await pool.submit("c", h.task("c1")); // waits for a slot
    await pool.submit("d", h.task("d1")); // waits for a slot
    let blocked: boolean | undefined;
    const blockedSubmit = Promise.resolve(pool.submit("e", h.task("e1"))).then((accepted) => (blocked = accepted));
    await settle();
    expect(h.started()).toEqual(["a1", "b1"]);

    expect(pool.cancelWaiting()).toBe(3);
    await blockedSubmit;
    expect(blocked).toBe(false);
    expect(await pool.submit("f", h.task("f1"))).toBe(false);

    h.open("a1");
    h.open("b1");
    await pool.drain();
    expect(h.started()).toEqual(["a1", "b1"]);
    expect(h.log).toContain("end a1");
    expect(h.log).toContain("end b1");
  });

  it("drain waits for every task, then rethrows a task's throw", async () => {
    const pool = new OrderedPool({ concurrency: 2, ordered: true, maxQueued: 10 });
    const ran: string[] = [];
    await pool.submit("a", async () => {
      await settle();
      throw new Error("task bug");
    });
    await pool.submit("a", async () => {
      ran.push("after the throw, same key");
    });
    await pool.submit("b", async () => {
      await settle();
      ran.push("other key");
    });

    await expect(pool.drain()).rejects.toThrow("task bug");
    expect(ran.sort()).toEqual(["after the throw, same key", "other key"]);
  });

  it("drain resolves at once when nothing was submitted", async () => {
    const pool = new OrderedPool({ concurrency: 1, ordered: true, maxQueued: 1 });
    await expect(pool.drain()).resolves.toBeUndefined();
  });

  it("starts a task of several keys (a batch) only when every key's earlier task has ended, and holds later tasks of those keys behind it", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 4, ordered: true, maxQueued: 100 });
    await pool.submit("a", h.task("a1"));
    await pool.submit("b", h.task("b1"));
    await pool.submit(["a", "b", "c"], h.task("batch"));
    await pool.submit("c", h.task("c2"));
    await pool.submit("d", h.task("d1"));
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "d1"]);

    h.open("a1");
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "d1"]);
    h.open("b1");
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "d1", "batch"]);
    h.open("batch");
    await settle();
    expect(h.started()).toEqual(["a1", "b1", "d1", "batch", "c2"]);
    h.open("c2");
    h.open("d1");
    await pool.drain();
  });

  it("counts a task waiting on several keys once when waiting tasks are cancelled", async () => {
    const h = harness();
    const pool = new OrderedPool({ concurrency: 4, ordered: true, maxQueued: 100 });
    await pool.submit("a", h.task("a1"));
    await pool.submit("b", h.task("b1"));
    await pool.submit(["a", "b"], h.task("batch"));
    await settle();
    expect(pool.cancelWaiting()).toBe(1);
    h.open("a1");
    h.open("b1");
    await pool.drain();
  });
});
