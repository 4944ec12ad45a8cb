import { closeSync, fstatSync, ftruncateSync, statSync, writeSync } from "node:fs";
import { OutputWriteError } from "../core/errors.js";
import { describeOutputError, type KeptFile, openOutputFile } from "./output-file.js";

/**
 * An append-only text file written in batches: `append` buffers, `flush` writes the buffer with
 * as few system calls as it takes. Written data survives `kill -9` (it is in the kernel), which
 * is all a journal needs. The file is opened at once (see openOutputFile), so that a path that
 * cannot be written stops a run before its first request.
 *
 * A write that fails (a full disk, an I/O error) never leaves half a record: the file is cut back
 * to the end of the last whole flush and flush throws OutputWriteError. By default the file is
 * then marked broken (later flushes write nothing): a journal must not go on past a gap. A file
 * opened with `afterFailure: "retry"`, whose records stand alone (a capture), is written again by
 * the next flush, unless the cut back failed.
 */
export class AppendFile {
  private buffer: string[] = [];
  /** The records the last flush wrote whole: what takeBack can take off the end again. */
  private lastFlushed: readonly string[] = [];
  private written = 0;
  private size: number;
  private failure: OutputWriteError | undefined;
  /** False for a device (/dev/null, /dev/full): never removed, never cut back. */
  readonly isRegularFile: boolean;
  private readonly identity: { dev: number; ino: number } | undefined;
  /**
   * Whether writes name their place (the end this file knows of): a file opened afresh has no
   * O_APPEND (see openOutputFile), and one cut back (takeBack) ends before the descriptor's
   * offset. One opened to append writes at the end the system knows, wherever another wrote.
   */
  private readonly writesAtSize: boolean;

  private constructor(
    readonly path: string,
    private readonly what: string,
    private fd: number | undefined,
    mode: "append" | "truncate",
    private readonly afterFailure: "stop" | "retry",
  ) {
    const stats = fd === undefined ? undefined : fstatSync(fd);
    this.size = stats?.size ?? 0;
    this.isRegularFile = stats?.isFile() === true;
    this.writesAtSize = mode === "truncate" && this.isRegularFile;
    this.identity = stats?.isFile() === true ? { dev: stats.dev, ino: stats.ino } : undefined;
  }

  /** This file, named `what`, for the run's other outputs to be checked against (none for a device). */
  asKept(what: string): KeptFile | undefined {
    return this.identity === undefined ? undefined : { ...this.identity, what };
  }

  /**
   * @param mode "append" keeps what the file holds, "truncate" starts it afresh.
   * @param options.afterFailure "stop" (the default) or "retry" (see the class).
   * @param options.kept files this one must not be (the input): see openOutputFile.
   */
  static open(
    path: string,
    what: string,
    mode: "append" | "truncate",
    options: { afterFailure?: "stop" | "retry"; kept?: readonly KeptFile[] } = {},
  ): AppendFile {
    return new AppendFile(path, what, openOutputFile(path, what, mode, options.kept ?? []), mode, options.afterFailure ?? "stop");
  }

  append(text: string): void {
    this.buffer.push(text);
  }

  /** How many records have been written whole (a failed flush counts those that fit). */
  get count(): number {
    return this.written;
  }

  /** The write error that broke this file, if one did. */
  get broken(): OutputWriteError | undefined {
    return this.failure;
  }

  flush(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.buffer.length === 0 || this.fd === undefined) return;
    const records = this.buffer;
    const bytes = Buffer.from(records.join(""));
    this.buffer = [];
    let offset = 0;
    try {
      const at = (): number | null => (this.writesAtSize ? this.size + offset : null);
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset, bytes.length - offset, at());
    } catch (error) {
      // Keep the records that reached the file whole; cut off the one that did not.
      const { count, length } = wholeRecords(records, offset);
      let whole = offset === length;
      try {
        if (!whole && this.isRegularFile) {
          ftruncateSync(this.fd, this.size + length);
          whole = true;
        }
      } catch {
        // The reader drops a torn last line anyway (it has no newline).
      }
      this.size += length;
      this.written += count;
      this.lastFlushed = records.slice(0, count);
      const failure = new OutputWriteError(`could not write ${this.what} ${this.path}: ${describeOutputError(error, this.path)}`, { cause: error });
      if (this.afterFailure === "stop" || !whole) this.failure = failure;
      throw failure;
    }
    this.size += bytes.length;
    this.written += records.length;
    this.lastFlushed = records;
  }

  /**
   * Cuts the last `count` records of the last flush off the file again: records another file had
   * to agree with and does not (dead letters whose lines the journal could not record, which
   * --resume would dead-letter a second time). A device keeps what it was given.
   */
  takeBack(count: number): void {
    const taken = this.lastFlushed.slice(this.lastFlushed.length - count);
    if (count <= 0 || taken.length !== count) return;
    const bytes = Buffer.byteLength(taken.join(""));
    this.lastFlushed = this.lastFlushed.slice(0, this.lastFlushed.length - count);
    this.written -= count;
    if (this.fd === undefined || !this.isRegularFile) return;
    try {
      ftruncateSync(this.fd, this.size - bytes);
    } catch (error) {
      this.failure ??= new OutputWriteError(`could not cut back ${this.what} ${this.path}: ${describeOutputError(error, this.path)}`, { cause: error });
      throw this.failure;
    }
    this.size -= bytes;
  }

  /**
   * Whether the path still names the open file: false once it was removed or replaced (writes
   * would then go nowhere anyone can read). A device or a pipe always is.
   */
  isStillAtPath(): boolean {
    if (this.fd === undefined || !this.isRegularFile) return true;
    try {
      const [open, named] = [fstatSync(this.fd), statSync(this.path)];
      return open.ino === named.ino && open.dev === named.dev;
    } catch {
      return false;
    }
  }

  /** Flushes (unless broken) and closes. */
  close(): void {
    try {
      if (this.failure === undefined) this.flush();
    } finally {
      if (this.fd !== undefined) closeSync(this.fd);
      this.fd = undefined;
    }
  }
}

/** How many of `records` (and how many bytes of them) lie whole within the first `bytes` written. */
function wholeRecords(records: readonly string[], bytes: number): { count: number; length: number } {
  let length = 0;
  let count = 0;
  for (const record of records) {
    const next = length + Buffer.byteLength(record);
    if (next > bytes) break;
    length = next;
    count += 1;
  }
  return { count, length };
}
