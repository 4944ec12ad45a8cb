import { closeSync, fstatSync, ftruncateSync, statSync, writeSync } from "node:fs";
import { OutputWriteError } from "../core/errors.js";
import { describeOutputError, type KeptFile, openOutputFile } from "./output-file.js";
import type { TurnLock } from "./turn-lock.js";

/** An open append file as another thread of the process takes it (it crosses threads): see share and attach. */
export interface SharedAppendFile {
  path: string;
  what: string;
  fd: number;
  mode: "append" | "truncate";
  /** The file's size, its records written whole and the write error that broke it, as every thread sees them. */
  memory: SharedArrayBuffer;
}

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
 *
 * Threads of one process may append to one file (replay --workers: its journal and dead-letter
 * file): the thread that opened it shares it (share), the others attach to it with a TurnLock
 * they all hold for each of their writes, and each then writes, cuts back and takes back as the
 * only writer would. Its size, its count and whether it broke are then the file's, whichever
 * thread wrote.
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
  private shared: SharedState | undefined;
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
    private readonly mode: "append" | "truncate",
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

  /**
   * Lets other threads append to this file (attach) while this one writes nothing: its count and
   * whether it broke are then every thread's. The file stays this thread's to close.
   */
  share(): SharedAppendFile {
    if (this.fd === undefined || this.buffer.length > 0) throw new Error(`${this.what} ${this.path} is closed or has records not written: it cannot be shared`);
    const state = SharedState.create(this.size, this.written, this.failure);
    this.shared = new SharedState(state, undefined);
    return { path: this.path, what: this.what, fd: this.fd, mode: this.mode, memory: state };
  }

  /** A file another thread opened and shared, appended to from this thread under `lock` (held by every thread that appends). Never closed here. */
  static attach(file: SharedAppendFile, lock: TurnLock): AppendFile {
    const attached = new AppendFile(file.path, file.what, file.fd, file.mode, "stop");
    attached.shared = new SharedState(file.memory, lock);
    return attached;
  }

  append(text: string): void {
    this.buffer.push(text);
  }

  /** How many records have been written whole (a failed flush counts those that fit). */
  get count(): number {
    this.catchUp();
    return this.written;
  }

  /** The write error that broke this file, if one did. */
  get broken(): OutputWriteError | undefined {
    this.catchUp();
    return this.failure;
  }

  flush(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.buffer.length === 0 || this.fd === undefined) return;
    this.catchUp();
    if (this.failure !== undefined) throw this.failure;
    try {
      this.write(this.fd);
    } finally {
      this.shared?.publish(this.size, this.written, this.failure);
    }
  }

  /** Of a shared file: takes the lock (attached) and what the other threads wrote to it. */
  private catchUp(): void {
    const { shared } = this;
    if (shared === undefined) return;
    shared.enter();
    this.size = shared.size;
    this.written = shared.count;
    this.failure ??= shared.failure;
  }

  private write(fd: number): void {
    const records = this.buffer;
    const bytes = Buffer.from(records.join(""));
    this.buffer = [];
    let offset = 0;
    try {
      const at = (): number | null => (this.writesAtSize ? this.size + offset : null);
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset, at());
    } catch (error) {
      // Keep the records that reached the file whole; cut off the one that did not.
      const { count, length } = wholeRecords(records, offset);
      let whole = offset === length;
      try {
        if (!whole && this.isRegularFile) {
          ftruncateSync(fd, this.size + length);
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
    this.catchUp();
    try {
      this.cutOff(taken);
    } finally {
      this.shared?.publish(this.size, this.written, this.failure);
    }
  }

  private cutOff(taken: readonly string[]): void {
    const bytes = Buffer.byteLength(taken.join(""));
    this.lastFlushed = this.lastFlushed.slice(0, this.lastFlushed.length - taken.length);
    this.written -= taken.length;
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

/**
 * A shared file's figures in memory every thread sees: its size and records (two 64-bit
 * integers), then the message of the write error that broke it (its length in bytes, 0 while it
 * is whole, then up to FAILURE_BYTES of UTF-8). Read and written under the lock of the threads
 * that append (`lock`); the thread that shared the file takes none: it writes nothing meanwhile.
 */
class SharedState {
  private readonly numbers: BigInt64Array;
  private readonly failureLength: Int32Array;
  private readonly failureText: Buffer;

  constructor(
    memory: SharedArrayBuffer,
    private readonly lock: TurnLock | undefined,
  ) {
    this.numbers = new BigInt64Array(memory, 0, 2);
    this.failureLength = new Int32Array(memory, 16, 1);
    this.failureText = Buffer.from(memory, 20, FAILURE_BYTES);
  }

  static create(size: number, count: number, failure: OutputWriteError | undefined): SharedArrayBuffer {
    const memory = new SharedArrayBuffer(20 + FAILURE_BYTES);
    new SharedState(memory, undefined).publish(size, count, failure);
    return memory;
  }

  /** Takes the threads' lock (see TurnLock) before the figures are read and changed. */
  enter(): void {
    this.lock?.hold();
  }

  get size(): number {
    return Number(Atomics.load(this.numbers, 0));
  }

  get count(): number {
    return Number(Atomics.load(this.numbers, 1));
  }

  /** The write error that broke the file, as the thread that met it said it. */
  get failure(): OutputWriteError | undefined {
    const length = Atomics.load(this.failureLength, 0);
    return length === 0 ? undefined : new OutputWriteError(this.failureText.toString("utf8", 0, length));
  }

  publish(size: number, count: number, failure: OutputWriteError | undefined): void {
    Atomics.store(this.numbers, 0, BigInt(size));
    Atomics.store(this.numbers, 1, BigInt(count));
    if (failure === undefined || Atomics.load(this.failureLength, 0) !== 0) return;
    // Buffer.write writes whole characters only.
    Atomics.store(this.failureLength, 0, this.failureText.write(failure.message, "utf8"));
  }
}

/** Room for a write error's message (it names the file: a long path is cut at a character). */
const FAILURE_BYTES = 2048;
