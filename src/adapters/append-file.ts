import { closeSync, fstatSync, ftruncateSync, writeSync } from "node:fs";
import { OutputWriteError } from "../core/errors.js";
import { describeOutputError, openOutputFile } from "./output-file.js";

/**
 * An append-only text file written in batches: `append` buffers, `flush` writes the buffer with
 * as few system calls as it takes. Written data survives `kill -9` (it is in the kernel), which
 * is all a journal needs. The file is opened at once (see openOutputFile), so that a path that
 * cannot be written stops a run before its first request.
 *
 * A write that fails (a full disk, an I/O error) never leaves half a record: the file is cut back
 * to the end of the last whole flush, the file is marked broken (later flushes write nothing)
 * and flush throws OutputWriteError.
 */
export class AppendFile {
  private buffer: string[] = [];
  private written = 0;
  private size: number;
  private failure: OutputWriteError | undefined;
  /** False for a device (/dev/null, /dev/full) or a pipe: never removed, never cut back. */
  readonly isRegularFile: boolean;

  private constructor(
    readonly path: string,
    private readonly what: string,
    private fd: number | undefined,
  ) {
    const stats = fd === undefined ? undefined : fstatSync(fd);
    this.size = stats?.size ?? 0;
    this.isRegularFile = stats?.isFile() === true;
  }

  /** @param mode "append" keeps what the file holds, "truncate" starts it afresh. */
  static open(path: string, what: string, mode: "append" | "truncate"): AppendFile {
    return new AppendFile(path, what, openOutputFile(path, what, mode));
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
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset);
    } catch (error) {
      // Keep the records that reached the file whole; cut off the one that did not.
      const { count, length } = wholeRecords(records, offset);
      try {
        if (offset > length && this.isRegularFile) ftruncateSync(this.fd, this.size + length);
      } catch {
        // The reader drops a torn last line anyway (it has no newline).
      }
      this.size += length;
      this.written += count;
      this.failure = new OutputWriteError(`could not write ${this.what} ${this.path}: ${describeOutputError(error, this.path)}`, { cause: error });
      throw this.failure;
    }
    this.size += bytes.length;
    this.written += records.length;
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
