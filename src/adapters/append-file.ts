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

  private constructor(
    readonly path: string,
    private readonly what: string,
    private fd: number | undefined,
  ) {
    this.size = fd === undefined ? 0 : fstatSync(fd).size;
  }

  /** @param mode "append" keeps what the file holds, "truncate" starts it afresh. */
  static open(path: string, what: string, mode: "append" | "truncate"): AppendFile {
    return new AppendFile(path, what, openOutputFile(path, what, mode));
  }

  append(text: string): void {
    this.buffer.push(text);
  }

  /** How many records have been written whole. */
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
    const records = this.buffer.length;
    const bytes = Buffer.from(this.buffer.join(""));
    this.buffer = [];
    let offset = 0;
    try {
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset);
    } catch (error) {
      // Cut off what this flush wrote in part, so the file ends on a whole record.
      try {
        if (offset > 0) ftruncateSync(this.fd, this.size);
      } catch {
        // The reader drops a torn last line anyway (it has no newline).
      }
      this.failure = new OutputWriteError(`could not write ${this.what} ${this.path}: ${describeOutputError(error, this.path)}`, { cause: error });
      throw this.failure;
    }
    this.size += bytes.length;
    this.written += records;
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
