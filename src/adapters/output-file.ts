import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { UsageError } from "../core/errors.js";

export type OutputMode = "append" | "truncate" | "create-new";

// No O_TRUNC: a file is cut only once it is known not to be one wh must keep (see openOutputFile).
const MODE_FLAGS: Record<OutputMode, number> = {
  append: constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND,
  truncate: constants.O_WRONLY | constants.O_CREAT,
  "create-new": constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
};

/** A regular file a run reads or already writes, which no other output of the run may be. */
export interface KeptFile {
  dev: number;
  ino: number;
  /** How a refusal names it: "the input events.ndjson", "the journal /tmp/x.wh-journal". */
  what: string;
}

/**
 * The regular file behind `source` (a path, following links, or an open descriptor such as
 * standard input's when it is redirected from a file), or undefined when it is none: a pipe, a
 * terminal, a device, a path that does not exist.
 */
export function keptFile(source: string | number, what: string): KeptFile | undefined {
  try {
    const stats = typeof source === "number" ? fstatSync(source) : statSync(source);
    return stats.isFile() ? { dev: stats.dev, ino: stats.ino, what } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens a file wh writes (journal, dead letters, lock, state, capture) before the first request,
 * so a missing directory, a directory in the way, a read-only file system, a symbolic link, a
 * named pipe or one of the `kept` files (see checkOutputPath) is a usage error (exit 2) naming
 * `what` and the path, and never a failure after delivering or a destroyed input. The file is
 * opened with O_NOFOLLOW: wh never writes through a symbolic link to whatever it points at;
 * "truncate" cuts it only once the open file passed the same checks. Returns the descriptor.
 */
export function openOutputFile(path: string, what: string, mode: OutputMode, kept: readonly KeptFile[] = []): number {
  checkOutputPath(path, what, kept);
  let fd: number;
  try {
    fd = openSync(path, MODE_FLAGS[mode] | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    throw new UsageError(`${what} ${path}: ${describeOutputError(error, path)}`, { cause: error, hint: "nothing was sent" });
  }
  try {
    // Again on what was opened: the path may have been replaced since it was checked.
    const stats = fstatSync(fd);
    const problem = stats.isFile() || stats.isCharacterDevice() ? sameFile(stats, kept) : stats.isFIFO() ? NAMED_PIPE : "not a regular file";
    if (problem !== undefined) throw refusal(what, path, problem);
    if (mode === "truncate" && stats.isFile()) ftruncateSync(fd, 0);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/**
 * Refuses, before anything opens or reads it, an output path that is a named pipe (opening it
 * would wait for a reader, forever if none comes) or one of the `kept` files: the same file by
 * device and inode (a hard link, or the target of a linked input, included).
 */
export function checkOutputPath(path: string, what: string, kept: readonly KeptFile[]): void {
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch {
    return; // missing, or unreadable: opening it says why
  }
  const problem = stats.isFIFO() ? NAMED_PIPE : sameFile(stats, kept);
  if (problem !== undefined) throw refusal(what, path, problem);
}

const NAMED_PIPE = "is a named pipe (FIFO): wh writes regular files, or a device such as /dev/null";

function sameFile(stats: Stats, kept: readonly KeptFile[]): string | undefined {
  const same = stats.isFile() ? kept.find((file) => file.dev === stats.dev && file.ino === stats.ino) : undefined;
  return same === undefined ? undefined : `is ${same.what} (the same file): wh would overwrite it`;
}

function refusal(what: string, path: string, reason: string): UsageError {
  return new UsageError(`${what} ${path}: ${reason}`, { hint: "nothing was sent" });
}

/** Why a file could not be opened or written, in a person's words. */
export function describeOutputError(error: unknown, path: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
      return `no such directory: ${dirname(path)}`;
    case "ENOTDIR":
      return "a part of the path is not a directory";
    case "EISDIR":
      return "is a directory";
    case "ELOOP":
      return "is a symbolic link (wh does not write through links: give the real path)";
    case "EROFS":
      return "read-only file system";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "ENOSPC":
      return "no space left on device";
    case "EDQUOT":
      return "disk quota exceeded";
    case "EEXIST":
      return "already exists";
    default:
      return `${(error as Error).message}${code === undefined ? "" : ` (${code})`}`;
  }
}
