import { closeSync, fsyncSync, lstatSync, renameSync, rmSync, writeSync } from "node:fs";
import { UsageError } from "../core/errors.js";
import { describeOutputError, openOutputFile } from "./output-file.js";

/** A file written whole or not at all: aside, synced, then renamed over the path. */
export interface ReplacedFile {
  /** Writes the text aside and renames it over the path; throws the fs error when that fails. */
  replace(text: string): void;
  /** Removes what was set aside, when nothing is to be written. */
  discard(): void;
}

/**
 * Checks, before anything is sent, that `path` can be replaced: the file it will be renamed from
 * is created now, in the same directory, without following links. A directory, a symbolic link
 * (renaming over it would replace the link, not write through it) or a special file at `path`
 * is a usage error naming `what` (the flag) and the path.
 */
export function openReplacedFile(path: string, what: string): ReplacedFile {
  const kind = fileKind(path);
  const refuse = (reason: string) => new UsageError(`${what} ${path}: ${reason}`, { hint: "nothing was sent" });
  if (kind === "directory") throw refuse("is a directory");
  if (kind === "special") throw refuse("not a regular file");
  if (kind === "link") throw refuse("is a symbolic link (wh does not write through links: give the real path)");
  const temporary = `${path}.${process.pid}.tmp`;
  let fd: number | undefined = openAside(temporary, path, what);
  return {
    replace(text) {
      fd ??= openAside(temporary, path, what);
      writeSync(fd, text);
      fsyncSync(fd);
      closeSync(fd);
      fd = undefined;
      renameSync(temporary, path);
    },
    discard() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
      rmSync(temporary, { force: true });
    },
  };
}

/** Opens the file set aside; it is new, so what stops it is of the directory it shares with `path`: named by `path`. */
function openAside(temporary: string, path: string, what: string): number {
  try {
    return openOutputFile(temporary, what, "truncate");
  } catch (error) {
    const cause = error instanceof UsageError ? error.cause : undefined;
    if (cause === undefined) throw error;
    throw new UsageError(`${what} ${path}: ${describeOutputError(cause, path)}`, { cause, hint: "nothing was sent" });
  }
}

function fileKind(path: string): "directory" | "link" | "special" | "file" | "missing" {
  try {
    const stats = lstatSync(path);
    return stats.isSymbolicLink() ? "link" : stats.isDirectory() ? "directory" : stats.isFile() ? "file" : "special";
  } catch {
    return "missing";
  }
}
