import { randomBytes } from "node:crypto";
import { closeSync, linkSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { UsageError } from "../core/errors.js";
import { parseJsonOrThrow } from "../core/message/parse-json.js";
import { openOutputFile } from "./output-file.js";

interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
  token: string;
}

export interface FileLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes `path` (a lock beside a journal or state file) for this process, so that two runs never
 * write the same journal. The lock is a file created exclusively, holding the owner's pid and host.
 * A lock whose process is gone (kill -9) is taken over: it is renamed aside (only one contender can
 * do that), and put back if it turns out a live process had taken it over meanwhile.
 */
export function acquireLock(path: string, what: string): FileLock {
  const me: LockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), token: randomBytes(8).toString("hex") };
  for (let attempt = 0; attempt < 5; attempt += 1) {
    if (tryCreate(path, what, me)) return { path, release: () => release(path, me) };
    const owner = readOwner(path);
    if (owner === undefined) {
      const ageMs = lockAgeMs(path);
      if (ageMs === undefined) continue; // released meanwhile: try again
      // Created but never written: a process that died between the two, or one starting now.
      if (ageMs < 2_000) throw new UsageError(`${what} is being taken by another wh run just now (${path})`);
    } else if (isAlive(owner)) throw inUse(path, what, owner);
    const aside = `${path}.stale-${me.token}`;
    try {
      renameSync(path, aside);
    } catch {
      continue; // another process moved it first
    }
    const moved = readOwner(aside);
    if (moved !== undefined && moved.token !== owner?.token && isAlive(moved)) {
      // A live process took the lock between our read and our rename: give it back.
      try {
        linkSync(aside, path);
      } catch {
        // someone holds a newer lock already
      }
      unlinkSync(aside);
      throw inUse(path, what, moved);
    }
    unlinkSync(aside);
  }
  throw new UsageError(`${what} ${path}: could not take the lock (it keeps changing hands)`);
}

function tryCreate(path: string, what: string, me: LockOwner): boolean {
  let fd: number;
  try {
    fd = openOutputFile(path, what, "create-new");
  } catch (error) {
    if (((error as Error).cause as NodeJS.ErrnoException | undefined)?.code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, `${JSON.stringify(me)}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

function lockAgeMs(path: string): number | undefined {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const owner = parseJsonOrThrow(readFileSync(path, "utf8")) as LockOwner;
    return typeof owner.pid === "number" && typeof owner.token === "string" ? owner : undefined;
  } catch {
    return undefined;
  }
}

/** A process on another host cannot be checked: it counts as alive. */
function isAlive(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return true;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function inUse(path: string, what: string, owner: LockOwner): UsageError {
  return new UsageError(`${what} is in use by another wh run: process ${owner.pid} on ${owner.host}, started ${owner.startedAt}`, {
    hint: `wait for it to end (or stop it); if that process is gone, delete ${path}`,
  });
}

function release(path: string, me: LockOwner): void {
  // Only our own lock: never one that was taken over from us.
  if (readOwner(path)?.token === me.token) unlinkSync(path);
}
