import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, linkSync, lstatSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { UsageError } from "../core/errors.js";
import { parseJsonOrThrow } from "../core/message/parse-json.js";
import { describeOutputError, openOutputFile } from "./output-file.js";

interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
  token: string;
  /**
   * When the owner process started, as the kernel counts it (Linux: field 22 of /proc/PID/stat),
   * so that a pid used again by another process (a restarted container's pid 1) is told apart.
   */
  processStart?: string | undefined;
}

export interface FileLock {
  readonly path: string;
  release(): void;
}

/** The tokens of the locks this process holds: a lock naming our pid with another token is not ours. */
const held = new Set<string>();

/**
 * Takes `path` (a lock beside a journal or state file) for this process, so that two runs never
 * write the same journal. The lock is a file holding the owner's pid, host, start time and a
 * random token, which appears whole or not at all (written aside, then hard-linked into place),
 * so a contender always sees whom it belongs to. A lock whose process is gone (kill -9, or a pid
 * now used by another process) is taken over: one contender removes it (see removeStale), and
 * they race to create theirs. Anything at `path` that is not a lock is refused, never removed.
 */
export function acquireLock(path: string, what: string): FileLock {
  const me: LockOwner = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    token: randomBytes(8).toString("hex"),
    processStart: processStartOf(process.pid),
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    if (tryCreate(path, what, me)) {
      held.add(me.token);
      return { path, release: () => release(path, me) };
    }
    const owner = readOwner(path, what);
    if (owner === undefined) continue; // released meanwhile: try again
    if (!isGone(owner)) throw inUse(path, what, owner);
    removeStale(path, what, owner);
  }
  throw new UsageError(`${what} ${path}: could not take the lock (it keeps changing hands)`);
}

/** Tries at taking a lock, each after a stale one was removed (or another contender was removing it). */
const ATTEMPTS = 20;
/** How long a contender's claim on a stale lock may stand before it counts as left by one that died making it. */
const CLAIM_STALE_MS = 10_000;

/**
 * Removes the stale lock `stale` names, if it is still at `path`. The contenders that read it
 * claim it under one name, a hard link to the lock named after its token: one link is made, the
 * others find the name taken, wait a moment and try again. The claimant removes the lock only if
 * what it linked is that stale lock, and then nothing can change `path` before it does: a
 * contender's create fails while a lock is there, and the owner, gone, never releases it. The
 * lock used to be renamed aside instead, and put back if it was not the stale one: in the moment
 * it was aside a contender's new lock could be moved, a third contender create its own in the
 * empty place, and two runs hold the lock (5 processes racing for one, in CI).
 */
function removeStale(path: string, what: string, stale: LockOwner): void {
  const claim = `${path}.stale-${stale.token}`;
  try {
    linkSync(path, claim);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return; // removed meanwhile
    if (code !== "EEXIST") throw new UsageError(`${what} ${path}: could not take the lock: ${describeOutputError(error, path)}`, { cause: error });
    if (claimedLongAgo(claim)) unlinkQuietly(claim);
    else Atomics.wait(PAUSE, 0, 0, 2);
    return;
  }
  try {
    if (readOwner(claim, what)?.token === stale.token) unlinkSync(path);
  } finally {
    unlinkQuietly(claim);
  }
}

/** A 2 ms wait while another contender removes a stale lock (acquireLock is synchronous). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function claimedLongAgo(claim: string): boolean {
  try {
    return Date.now() - lstatSync(claim).ctimeMs > CLAIM_STALE_MS;
  } catch {
    return false; // gone meanwhile
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}

/** Creates the lock with its content in one step; false when a lock is there already. */
function tryCreate(path: string, what: string, me: LockOwner): boolean {
  const temporary = `${path}.${me.token}.tmp`;
  const fd = openOutputFile(temporary, what, "create-new");
  try {
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new UsageError(`${what} ${path}: could not take the lock: ${describeOutputError(error, path)}`, { cause: error, hint: "nothing was sent" });
  } finally {
    unlinkSync(temporary);
  }
}

/**
 * The owner a lock file names; undefined when there is no file (released meanwhile). Opened
 * without following links or waiting on a pipe; anything but a lock is refused.
 */
function readOwner(path: string, what: string): LockOwner | undefined {
  let text: string;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw notALock(path, what);
  }
  try {
    if (!fstatSync(fd).isFile()) throw notALock(path, what);
    text = readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
  let owner: Partial<LockOwner> | undefined;
  try {
    owner = parseJsonOrThrow(text) as Partial<LockOwner>;
  } catch {
    owner = undefined;
  }
  if (typeof owner?.pid !== "number" || typeof owner.token !== "string" || typeof owner.host !== "string") throw notALock(path, what);
  return owner as LockOwner;
}

/**
 * Whether the process a lock names is gone: no process has its pid, or one that started at
 * another time than the owner did (the pid was used again), or it is this very process and the
 * lock is not one it holds. A process on another host cannot be checked: it counts as alive.
 */
function isGone(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return false;
  if (owner.pid === process.pid) return !held.has(owner.token);
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return true;
  }
  const start = processStartOf(owner.pid);
  return owner.processStart !== undefined && start !== undefined && start !== owner.processStart;
}

/** A process's start time in clock ticks since boot (Linux); undefined where /proc cannot tell. */
function processStartOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces and parentheses): state is field 3.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[22 - 3];
  } catch {
    return undefined;
  }
}

function inUse(path: string, what: string, owner: LockOwner): UsageError {
  return new UsageError(`${what} is in use by another wh run: process ${owner.pid} on ${owner.host}, started ${owner.startedAt}`, {
    hint: `wait for it to end (or stop it); if that process is gone, delete ${path}`,
  });
}

function notALock(path: string, what: string): UsageError {
  return new UsageError(`${what}: ${path} is not a wh lock file`, {
    hint: "wh never removes a file it did not write: move it away, or delete it if it is a lock left by a wh run that is gone",
  });
}

function release(path: string, me: LockOwner): void {
  held.delete(me.token);
  // Only our own lock: never one that was taken over from us.
  try {
    if (readOwner(path, "")?.token === me.token) unlinkSync(path);
  } catch {
    // Whatever is there now is not ours to remove.
  }
}
