import { randomUUID } from "node:crypto";
import type { Readable, Writable } from "node:stream";
import { systemClock } from "../../adapters/system-clock.js";
import { type Clock, clockStamps } from "../../core/clock.js";
import type { MessageStamps } from "../../core/message/prepare.js";

/** What a command may touch of the process: passed in, so commands never reach for globals. */
export interface CliIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** `fd` when it has a descriptor (process.stdin: 0), to tell the file it is redirected from. */
  stdin: Readable & { isTTY?: boolean; fd?: number };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborts on the first Ctrl-C (SIGINT) or SIGTERM. */
  signal: AbortSignal;
  /** The waits a command makes; absent, the defaults users get. Tests shorten them. */
  timings?: Partial<CliTimings> | undefined;
  /**
   * The time a command stamps messages with and its deliveries wait their retries by (absent: the
   * real clock): one clock for both, so a test that moves time moves both. Tests fix it, or make
   * its sleeps return at once. The grace period, the progress cadence (`timings`) and --rate stay
   * on real timers: they pace a person watching and a server's load, not the retry schedule.
   */
  clock?: Clock | undefined;
  /** The messageIds a command gives messages without one (absent: randomUUID). */
  newId?: (() => string) | undefined;
  /** A person asking that deliveries waiting to retry try again now (SIGUSR1, a key on a terminal). */
  retryNow?: RetryNowRequests | undefined;
  /**
   * What a Ctrl-C does (main.ts's SIGINT handler: the first stops cleanly, a second exits at
   * once), for a command reading raw keys, where the terminal no longer sends SIGINT itself.
   * Absent, a command never reads raw keys.
   */
  interrupt?: (() => void) | undefined;
  /**
   * Tunes the process's collector for a server that runs for hours (tuneCollectorForServer):
   * main.ts's io does; an in-process test's does not, its heap being the test runner's.
   */
  tuneForServer?: (() => void) | undefined;
}

/**
 * "Retry now", asked from outside a command's flow: a running command listens while it has
 * deliveries that may wait to retry, and cuts those waits short when asked.
 */
export class RetryNowRequests {
  private readonly listeners = new Set<() => void>();

  /** Asks every command listening to retry its waiting deliveries now. */
  request(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Listens until the returned function is called. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The clock a command stamps and waits with: the io's, else the real one. */
export function commandClock(io: CliIo): Clock {
  return io.clock ?? systemClock;
}

/** The messageIds a command makes: the io's, else random UUIDs. */
export function commandIds(io: CliIo): () => string {
  return io.newId ?? randomUUID;
}

/** What a command stamps messages with: the io's clock and ids, else the real ones. */
export function commandStamps(io: CliIo): MessageStamps {
  return clockStamps(commandClock(io), commandIds(io));
}

export interface CliTimings {
  /** After the first Ctrl-C, how long deliveries in flight may finish (default 5 s). */
  graceMs: number;
  /** How often a run off a terminal logs its progress (default 5 s). */
  progressEveryMs: number;
  /** How long a request may be on the wire before a run's progress counts it as hanging (default 5 s). */
  hangingAfterMs: number;
  /** wh check: the time allowed for each answer (default Segment's 5 s); tests shorten it, users cannot. */
  checkTimeoutMs?: number | undefined;
}

/** The global flags, as commander parses them. */
export interface GlobalFlags {
  json?: boolean;
  quiet?: boolean;
  color?: boolean;
}
