import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { UsageError } from "../core/errors.js";

export type OutputMode = "append" | "truncate" | "create-new";

const MODE_FLAGS: Record<OutputMode, number> = {
  append: constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND,
  truncate: constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC,
  "create-new": constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
};

/**
 * Opens a file wh writes (journal, dead letters, lock, state, capture) before the first request,
 * so a missing directory, a directory in the way, a read-only file system or a symbolic link is a
 * usage error (exit 2) naming `what` and the path, and never a failure after delivering. The file
 * is opened with O_NOFOLLOW: wh never writes through a symbolic link to whatever it points at.
 * Returns the open descriptor.
 */
export function openOutputFile(path: string, what: string, mode: OutputMode): number {
  let fd: number;
  try {
    fd = openSync(path, MODE_FLAGS[mode] | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    throw new UsageError(`${what} ${path}: ${describeOutputError(error, path)}`, { cause: error, hint: "nothing was sent" });
  }
  const stats = fstatSync(fd);
  if (!stats.isFile() && !stats.isCharacterDevice() && !stats.isFIFO()) {
    closeSync(fd);
    throw new UsageError(`${what} ${path}: not a regular file`, { hint: "nothing was sent" });
  }
  return fd;
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
