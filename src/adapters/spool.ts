import { appendFileSync, closeSync, fdatasync, ftruncateSync, mkdirSync, readdirSync, rmSync, write, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { OutputWriteError, UsageError } from "../core/errors.js";
import { acquireLock, type FileLock } from "./lock-file.js";
import { describeOutputError, openOutputFile } from "./output-file.js";
import { readAcks, scanSegment } from "./spool-files.js";
import { SpoolReader } from "./spool-reader.js";

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

/** Records per segment file: a segment is removed once every record in it has ended. */
const SEGMENT_RECORDS = 10_000;
const SEGMENT_NAME = /^(\d{16})\.ndjson$/;

/**
 * One spooled record: its sequence number (global, increasing) and its text (one JSON line); and,
 * when a reader was handed it as it was committed, what the appender attached to it.
 */
export interface SpoolRecord {
  seq: number;
  text: string;
  attached?: unknown;
}

export interface SpoolOptions {
  maxBytes: number;
  /**
   * Sees each record recovery finds still to deliver; says why it cannot be used (then it is
   * quarantined), or undefined when it can.
   */
  check?: ((text: string) => string | undefined) | undefined;
  /** Where quarantined records are appended, one JSON line each. */
  quarantinePath?: string | undefined;
}

/** What recovery set aside: how many records, and the file that holds them. */
export interface Quarantined {
  count: number;
  path: string;
}

/** A segment file as readers see it: where its records start, how many are whole on disk, which ended. */
export interface SegmentView {
  readonly start: number;
  readonly path: string;
  readonly records: number;
  readonly bytes: number;
  readonly ended: Uint8Array;
}

/** Records just made durable, handed to readers waiting at the end of the spool. */
export interface Committed {
  segment: SegmentView;
  first: number;
  texts: string[];
  attached: unknown[];
}

interface Segment extends SegmentView {
  records: number;
  bytes: number;
  ended: Uint8Array;
  endedCount: number;
  /** The ack file, and the acks not yet written to it (a full disk holds them back). */
  acksFd: number;
  unwrittenAcks: string;
  sealed: boolean;
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
 * Nothing of the backlog is held in memory but one bit per record: readers (`reader()`) read the
 * records from the files, a window at a time, and are handed new ones as they are committed once
 * they have caught up. On open, the segments are scanned a chunk at a time; a record that cannot
 * be read (a hole of NUL bytes left by an older wh, a line that is not a record) is moved to the
 * quarantine file instead of stopping the start.
 */
export class Spool {
  private readonly segments: Segment[] = [];
  private current: { segment: Segment; fd: number } | undefined;
  private next = 0;
  private pending: { texts: string[]; attached: readonly unknown[]; resolve: (seqs: number[]) => void; reject: (error: Error) => void }[] = [];
  private committing = false;
  private liveBytes = 0;
  private liveRecords = 0;
  private quarantined: Quarantined | undefined;
  private waiting: ((committed: Committed | undefined) => void)[] = [];
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly lock: FileLock,
    private readonly options: SpoolOptions,
  ) {}

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
      await spool.recover();
      return { spool, recovered: spool.liveRecords, quarantined: spool.quarantined };
    } catch (error) {
      spool.close();
      throw error;
    }
  }

  /** Records accepted and not yet ended. */
  get depth(): number {
    return this.liveRecords;
  }

  /** Bytes of the segments on disk. */
  get bytes(): number {
    return this.liveBytes;
  }

  /** The sequence number the next record will get. */
  get nextSeq(): number {
    return this.next;
  }

  /** True when `bytes` more would pass the spool's size limit. */
  full(bytes: number): boolean {
    return this.liveBytes + bytes > this.options.maxBytes;
  }

  /**
   * Appends records (each one JSON text without a newline) and resolves with their sequence
   * numbers once they are synced to disk. Rejects with OutputWriteError when the disk refuses;
   * then none of them is in the spool. `attached` (one per text) goes to the readers handed the
   * records as they are committed, so they need not parse what the appender holds already.
   */
  append(texts: string[], attached: readonly unknown[] = []): Promise<number[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({ texts, attached, resolve, reject });
      if (!this.committing) void this.commit();
    });
  }

  /** A reader of every record not ended, from the oldest, in order; it ends when the spool closes. */
  reader(): SpoolReader {
    return new SpoolReader(this, this.segments[0]?.start ?? this.next);
  }

  /** The segment holding `seq`, or else the first after it; undefined past the end. */
  segmentFrom(seq: number): SegmentView | undefined {
    return this.segments.find((segment) => seq < segment.start + segment.records);
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
      const texts = group.flatMap((entry) => entry.texts);
      const { segment, fd } = this.currentSegment();
      const bytes = Buffer.from(texts.map((record) => `${record}\n`).join(""));
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
      this.grow(segment, texts.length, bytes.length);
      let seq = first;
      for (const entry of group) entry.resolve(entry.texts.map(() => seq++));
      const waiting = this.waiting;
      this.waiting = [];
      const attached = group.flatMap((entry) => entry.texts.map((_, index) => entry.attached[index]));
      for (const resolve of waiting) resolve({ segment, first, texts, attached });
      if (segment.records >= SEGMENT_RECORDS) this.seal();
    }
    this.committing = false;
  }

  private grow(segment: Segment, added: number, bytes: number): void {
    if (segment.records + added > segment.ended.length) {
      const grown = new Uint8Array(segment.records + added);
      grown.set(segment.ended);
      segment.ended = grown;
    }
    segment.records += added;
    segment.bytes += bytes;
    this.next = segment.start + segment.records;
    this.liveBytes += bytes;
    this.liveRecords += added;
  }

  /**
   * Records that the record `seq` has ended (delivered, skipped, or failed and dead-lettered):
   * the spool is the forwarder's journal (see FinishedLog).
   */
  markFinished(seq: number): void {
    const segment = this.segmentFrom(seq) as Segment | undefined;
    if (segment === undefined || seq < segment.start) return;
    const index = seq - segment.start;
    if (segment.ended[index] === 1) return;
    this.end(segment, index, true);
  }

  /** Marks a record ended; `unwritten`: its ack is still to be written to the ack file. */
  private end(segment: Segment, index: number, unwritten: boolean): void {
    segment.ended[index] = 1;
    segment.endedCount += 1;
    this.liveRecords -= 1;
    if (unwritten) segment.unwrittenAcks += `${index}\n`;
  }

  /**
   * Never broken: an ack that cannot be written (a full disk) is held and written at a later
   * flush. Until then a restart would deliver those events again, a duplicate and not a loss;
   * and a segment whose every record has ended is removed all the same, which frees the disk.
   */
  readonly broken = undefined;

  /** Writes the acks recorded so far, and removes the segments whose every record has ended. */
  flush(): void {
    for (const segment of [...this.segments]) {
      if (segment.sealed && segment.endedCount === segment.records) {
        this.remove(segment);
        continue;
      }
      if (segment.unwrittenAcks === "") continue;
      const bytes = Buffer.from(segment.unwrittenAcks);
      let offset = 0;
      try {
        while (offset < bytes.length) offset += writeSync(segment.acksFd, bytes, offset);
      } catch {
        // Held for the next flush, from where the write stopped.
      }
      segment.unwrittenAcks = bytes.subarray(offset).toString();
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const resolve of this.waiting.splice(0)) resolve(undefined);
    try {
      this.seal();
      this.flush();
      for (const segment of this.segments) closeSync(segment.acksFd);
    } finally {
      this.lock.release();
    }
  }

  private currentSegment(): { segment: Segment; fd: number } {
    if (this.current !== undefined) return this.current;
    const start = this.next;
    const path = join(this.dir, `${String(start).padStart(16, "0")}.ndjson`);
    const fd = openOutputFile(path, "the spool segment", "truncate");
    const segment = this.track(start, path, "truncate");
    this.current = { segment, fd };
    return this.current;
  }

  private seal(): void {
    if (this.current === undefined) return;
    closeSync(this.current.fd);
    this.current.segment.sealed = true;
    this.current = undefined;
  }

  private track(start: number, path: string, acks: "append" | "truncate"): Segment {
    const acksFd = openOutputFile(`${path}.acks`, "the spool's acks", acks);
    const segment: Segment = { start, path, records: 0, bytes: 0, ended: new Uint8Array(SEGMENT_RECORDS), endedCount: 0, acksFd, unwrittenAcks: "", sealed: false };
    this.segments.push(segment);
    return segment;
  }

  private remove(segment: Segment): void {
    closeSync(segment.acksFd);
    rmSync(segment.path, { force: true });
    rmSync(`${segment.path}.acks`, { force: true });
    this.segments.splice(this.segments.indexOf(segment), 1);
    this.liveBytes -= segment.bytes;
  }

  /** Scans the segments left by earlier runs, a chunk at a time; every one is sealed, and appends go to a new one. */
  private async recover(): Promise<void> {
    const names = readdirSync(this.dir)
      .filter((name) => SEGMENT_NAME.test(name))
      .sort();
    for (const name of names) {
      const start = Number((SEGMENT_NAME.exec(name) as RegExpExecArray)[1]);
      const path = join(this.dir, name);
      const segment = this.track(start, path, "append");
      segment.sealed = true;
      const acked = readAcks(`${path}.acks`);
      const scanned = await scanSegment(path, (line, index) => {
        if (acked.has(index)) return;
        const problem = this.options.check?.(line.replace(/^\0+/, ""));
        if (problem !== undefined) this.quarantine(`${name} line ${index + 1}`, problem, line, segment, index);
      });
      this.grow(segment, scanned.records, scanned.bytes);
      for (const index of acked) if (index < segment.records && segment.ended[index] === 0) this.end(segment, index, false);
      this.next = Math.max(this.next, start + segment.records);
    }
    for (const segment of [...this.segments]) if (segment.endedCount === segment.records) this.remove(segment);
  }

  /** Sets a record aside in the quarantine file and ends it in the spool. */
  private quarantine(where: string, reason: string, text: string, segment: Segment, index: number): void {
    const path = this.options.quarantinePath ?? join(this.dir, "quarantine.ndjson");
    try {
      appendFileSync(path, `${JSON.stringify({ at: new Date().toISOString(), where, reason, text })}\n`);
    } catch (error) {
      throw new OutputWriteError(`could not quarantine ${where} to ${path}: ${describeOutputError(error, path)}`, { cause: error });
    }
    if (index >= segment.ended.length) {
      const grown = new Uint8Array(index + 1);
      grown.set(segment.ended);
      segment.ended = grown;
    }
    // grow() counts every record scanned as live once the scan ends: end() takes this one off.
    this.end(segment, index, true);
    this.quarantined = { count: (this.quarantined?.count ?? 0) + 1, path };
  }
}
