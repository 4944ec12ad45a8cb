import { fdatasync, ftruncateSync, mkdirSync, write } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { OutputWriteError, UsageError } from "../../core/errors.js";
import { acquireLock, type FileLock } from "../lock-file.js";
import { describeOutputError } from "../output-file.js";
import { SpoolReader, type SpoolSelector } from "./reader.js";
import { recoverSegments, type Quarantined, type RecoveryOptions } from "./recovery.js";
import { Segments, type SegmentView } from "./segments.js";

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

/** The most a spool keeps allocated between commits to encode them in: a group of 16 requests of 100 events of 1 KB takes 4.8 MB (its bound). */
const ENCODE_BUFFER_BYTES = 8 << 20;

/**
 * One spooled record: its sequence number (global, increasing) and its text (one JSON line); and,
 * when a reader was handed it as it was committed, what the appender attached to it.
 */
export interface SpoolRecord {
  seq: number;
  text: string;
  attached?: unknown;
}

export interface SpoolOptions extends RecoveryOptions {
  maxBytes: number;
}

/** Records just made durable, handed to readers waiting at the end of the spool. */
export interface Committed {
  segment: SegmentView;
  first: number;
  texts: string[];
  /** Their bytes in the file, newlines included. */
  bytes: number;
  attached: unknown[];
}

/**
 * The durable queue of `wh serve`: what was accepted is on disk (written and fdatasync'd) before
 * the request is answered, and stays until its delivery has ended.
 *
 * A directory of segment files (`<first seq>.ndjson`, one record per line) and beside each its
 * ack file (`.acks`, the indexes of the records that ended). Appends are group-committed: the
 * requests that arrive while a sync runs share the next one. Each group is written at the
 * position the last whole record ended, never at the file offset: a failed write (a full disk)
 * cuts the segment back to that position and rejects, so nothing half-written is ever answered
 * 200 and the next write leaves no hole. One process per directory (a lock file).
 *
 * Nothing of the backlog is held in memory but one bit per record (Segments): readers
 * (`reader()`) read the records from the files, a window at a time, and are handed new ones as
 * they are committed once they have caught up. On open, the segments are scanned a chunk at a
 * time (recoverSegments), and a record that cannot be read is quarantined.
 */
export class Spool {
  private readonly segments: Segments;
  private pending: { texts: string[]; attached: readonly unknown[]; resolve: (seqs: number[]) => void; reject: (error: Error) => void }[] = [];
  private committing = false;
  private waiting: ((committed: Committed | undefined) => void)[] = [];
  private closed = false;
  /** Whether readers waited for the last commit: appends keep what they attach while they do. */
  private followed = false;
  /** Where commits encode their groups (encode). */
  private encoded = Buffer.alloc(0);

  private constructor(
    readonly dir: string,
    private readonly lock: FileLock,
    private readonly options: SpoolOptions,
  ) {
    this.segments = new Segments(dir);
  }

  /** Opens (creating) the spool in `dir`: how many records are still to deliver, and what recovery quarantined. */
  static async open(dir: string, options: SpoolOptions): Promise<{ spool: Spool; recovered: number; quarantined: Quarantined | undefined }> {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new UsageError(`--data-dir ${dir}: ${describeOutputError(error, dir)}`, { cause: error });
    }
    const lock = acquireLock(join(dir, "spool.lock"), `the spool ${dir}`);
    const spool = new Spool(dir, lock, options);
    try {
      const quarantined = await recoverSegments(dir, spool.segments, options);
      return { spool, recovered: spool.depth, quarantined };
    } catch (error) {
      spool.close();
      throw error;
    }
  }

  /** Records accepted and not yet ended. */
  get depth(): number {
    return this.segments.liveRecords;
  }

  /** Bytes of the segments on disk. */
  get bytes(): number {
    return this.segments.liveBytes;
  }

  /** The sequence number the next record will get. */
  get nextSeq(): number {
    return this.segments.next;
  }

  /** True when `bytes` more would pass the spool's size limit. */
  full(bytes: number): boolean {
    return this.segments.liveBytes + bytes > this.options.maxBytes;
  }

  /**
   * Appends records (each one JSON text without a newline) and resolves with their sequence
   * numbers once they are synced to disk. Rejects with OutputWriteError when the disk refuses;
   * then none of them is in the spool. `attached` (one per text) goes to the readers handed the
   * records as they are committed, so they need not parse what the appender holds already. It is
   * kept only while readers follow the commits (one waits now, or waited for the last): else no
   * one would take it, and what it holds (wh serve's events, their parsed bodies) would live
   * until the fsync, through collections that then copy it. A reader that catches up meanwhile
   * reads those records' texts.
   */
  append(texts: string[], attached: readonly unknown[] = []): Promise<number[]> {
    const kept = this.waiting.length > 0 || this.followed ? attached : [];
    return new Promise((resolve, reject) => {
      this.pending.push({ texts, attached: kept, resolve, reject });
      if (!this.committing) void this.commit();
    });
  }

  /** A reader of every record not ended (or those `select` keeps), from the oldest (or `from`), in order; it ends when the spool closes. */
  reader(select?: SpoolSelector, from = this.segments.first, chunkBytes?: number): SpoolReader {
    return new SpoolReader(this, from, select, chunkBytes);
  }

  /** The segment holding `seq`, or else the first after it; undefined past the end. */
  segmentFrom(seq: number): SegmentView | undefined {
    return this.segments.from(seq);
  }

  /** Resolves with the next group committed, or undefined once the spool is closed. */
  nextCommit(): Promise<Committed | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private async commit(): Promise<void> {
    this.committing = true;
    while (this.pending.length > 0) {
      const group = this.pending;
      this.pending = [];
      const { segment, fd } = this.segments.currentSegment();
      const bytes = this.encode(group);
      try {
        let offset = 0;
        while (offset < bytes.length) offset += (await writeAsync(fd, bytes, offset, bytes.length - offset, segment.bytes + offset)).bytesWritten;
        await fdatasyncAsync(fd);
      } catch (error) {
        try {
          ftruncateSync(fd, segment.bytes);
        } catch {
          // The next write starts at segment.bytes all the same; recovery cuts a torn last line.
        }
        const failure = new OutputWriteError(`could not write the spool ${segment.path}: ${describeOutputError(error, segment.path)}`, { cause: error });
        for (const entry of group) entry.reject(failure);
        continue;
      }
      const first = segment.start + segment.records;
      let seq = first;
      for (const entry of group) entry.resolve(entry.texts.map(() => seq++));
      this.segments.grow(segment, seq - first, bytes.length);
      const waiting = this.waiting;
      this.waiting = [];
      this.followed = waiting.length > 0;
      if (waiting.length === 0) continue;
      const texts = group.flatMap((entry) => entry.texts);
      const attached = group.flatMap((entry) => entry.texts.map((_, index) => entry.attached[index]));
      for (const resolve of waiting) resolve({ segment, first, texts, bytes: bytes.length, attached });
    }
    this.committing = false;
  }

  /**
   * The group's lines as bytes, each append's records joined into one string (the records' own
   * copies were garbage) and encoded where the last ended. Not one string for the whole group: a
   * string that large (1.7 MB for 16 requests of 100 events of 1 KB) is allocated apart from the
   * others, in memory the system hands over afresh each time, and joining into it cost 0.9
   * against 0.4 us an event. The buffer is kept from one commit to the next (commits run one at a
   * time, each awaiting its write) while a group's bound fits in ENCODE_BUFFER_BYTES; a larger
   * group gets one of its own, of its exact size.
   */
  private encode(group: readonly { texts: readonly string[] }[]): Buffer {
    const chunks: string[] = [];
    // A UTF-16 code unit is at most 3 bytes of UTF-8; the newline after each chunk is one.
    let bound = 0;
    for (const { texts } of group) {
      if (texts.length === 0) continue;
      const chunk = texts.join("\n");
      chunks.push(chunk);
      bound += chunk.length * 3 + 1;
    }
    let buffer: Buffer;
    if (bound <= ENCODE_BUFFER_BYTES) {
      if (this.encoded.length < bound) this.encoded = Buffer.allocUnsafe(Math.min(ENCODE_BUFFER_BYTES, Math.max(bound, this.encoded.length * 2)));
      buffer = this.encoded;
    } else buffer = Buffer.allocUnsafe(chunks.reduce((sum, chunk) => sum + Buffer.byteLength(chunk) + 1, 0));
    let length = 0;
    for (const chunk of chunks) {
      length += buffer.write(chunk, length);
      buffer[length++] = 0x0a;
    }
    return buffer.subarray(0, length);
  }

  /**
   * Records that the record `seq` has ended (delivered, skipped, or failed and dead-lettered):
   * the spool is the forwarder's journal (see FinishedLog).
   */
  markFinished(seq: number): void {
    this.segments.markFinished(seq);
  }

  /** Writes the acks recorded so far, and removes the segments whose every record has ended. */
  flush(): void {
    this.segments.flush();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const resolve of this.waiting.splice(0)) resolve(undefined);
    try {
      this.segments.close();
    } finally {
      this.lock.release();
    }
  }
}
