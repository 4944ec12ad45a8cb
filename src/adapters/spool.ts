import { appendFileSync, closeSync, fdatasync, fstatSync, ftruncateSync, mkdirSync, readdirSync, readFileSync, rmSync, write, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { OutputWriteError, UsageError } from "../core/errors.js";
import { acquireLock, type FileLock } from "./lock-file.js";
import { describeOutputError, openOutputFile } from "./output-file.js";

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

/** Records per segment file: a segment is removed once every record in it has ended. */
const SEGMENT_RECORDS = 10_000;
const SEGMENT_NAME = /^(\d{16})\.ndjson$/;

/** One spooled record: its sequence number (global, increasing) and its text (one JSON line). */
export interface SpoolRecord {
  seq: number;
  text: string;
}

export interface SpoolOptions {
  maxBytes: number;
  /** Why a recovered record cannot be used (undefined when it can): such records are quarantined. */
  check?: ((text: string) => string | undefined) | undefined;
  /** Where quarantined records are appended, one JSON line each. */
  quarantinePath?: string | undefined;
}

/** What recovery set aside: how many records, and the file that holds them. */
export interface Quarantined {
  count: number;
  path: string;
}

interface Segment {
  start: number;
  path: string;
  /** Records written whole (the segment's lines). */
  records: number;
  bytes: number;
  /** Which records have ended, by index; and how many. */
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
 * 200 and the next write leaves no hole. One process per directory (a lock file). On open, the
 * records not yet ended are handed back in order, to be delivered again; a record that cannot be
 * read (a hole of NUL bytes left by an older wh, a line that is not a record) is moved to the
 * quarantine file instead of stopping the start.
 */
export class Spool {
  private readonly segments: Segment[] = [];
  private current: { segment: Segment; fd: number } | undefined;
  private nextSeq = 0;
  private pending: { texts: string[]; resolve: (seqs: number[]) => void; reject: (error: Error) => void }[] = [];
  private committing = false;
  private liveBytes = 0;
  private liveRecords = 0;
  private quarantined: Quarantined | undefined;

  private constructor(
    readonly dir: string,
    private readonly lock: FileLock,
    private readonly options: SpoolOptions,
  ) {}

  /**
   * Opens (creating) the spool in `dir`, and returns it with the records still to deliver, and
   * what recovery quarantined.
   */
  static open(dir: string, options: SpoolOptions): { spool: Spool; unfinished: SpoolRecord[]; quarantined: Quarantined | undefined } {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new UsageError(`--data-dir ${dir}: ${describeOutputError(error, dir)}`, { cause: error });
    }
    const lock = acquireLock(join(dir, "spool.lock"), `the spool ${dir}`);
    const spool = new Spool(dir, lock, options);
    try {
      const unfinished = spool.recover();
      return { spool, unfinished, quarantined: spool.quarantined };
    } catch (error) {
      lock.release();
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

  /** True when `bytes` more would pass the spool's size limit. */
  full(bytes: number): boolean {
    return this.liveBytes + bytes > this.options.maxBytes;
  }

  /**
   * Appends records (each one JSON text without a newline) and resolves with their sequence
   * numbers once they are synced to disk. Rejects with OutputWriteError when the disk refuses;
   * then none of them is in the spool.
   */
  append(texts: string[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({ texts, resolve, reject });
      if (!this.committing) void this.commit();
    });
  }

  private async commit(): Promise<void> {
    this.committing = true;
    while (this.pending.length > 0) {
      const group = this.pending;
      this.pending = [];
      const { segment, fd } = this.currentSegment();
      const text = group.map((entry) => entry.texts.map((record) => `${record}\n`).join("")).join("");
      const bytes = Buffer.from(text);
      try {
        let offset = 0;
        while (offset < bytes.length) offset += (await writeAsync(fd, bytes, offset, bytes.length - offset, segment.bytes + offset)).bytesWritten;
        await fdatasyncAsync(fd);
      } catch (error) {
        try {
          ftruncateSync(fd, segment.bytes);
        } catch {
          // Recovery drops a torn last line anyway.
        }
        const failure = new OutputWriteError(`could not write the spool ${segment.path}: ${describeOutputError(error, segment.path)}`, { cause: error });
        for (const entry of group) entry.reject(failure);
        continue;
      }
      const added = group.reduce((sum, entry) => sum + entry.texts.length, 0);
      if (segment.records + added > segment.ended.length) {
        const grown = new Uint8Array(segment.records + added);
        grown.set(segment.ended);
        segment.ended = grown;
      }
      const answers = group.map((entry) => {
        const seqs = entry.texts.map((_, index) => segment.start + segment.records + index);
        segment.records += entry.texts.length;
        return seqs;
      });
      this.nextSeq = segment.start + segment.records;
      segment.bytes += bytes.length;
      this.liveBytes += bytes.length;
      this.liveRecords += added;
      if (segment.records >= SEGMENT_RECORDS) this.seal();
      group.forEach((entry, index) => entry.resolve(answers[index] as number[]));
    }
    this.committing = false;
  }

  /**
   * Records that the record `seq` has ended (delivered, skipped, or failed and dead-lettered):
   * the spool is the forwarder's journal (see FinishedLog).
   */
  markFinished(seq: number): void {
    const segment = this.segmentOf(seq);
    if (segment === undefined) return;
    const index = seq - segment.start;
    if (segment.ended[index] === 1) return;
    segment.ended[index] = 1;
    segment.endedCount += 1;
    this.liveRecords -= 1;
    segment.unwrittenAcks += `${index}\n`;
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
    try {
      this.seal();
      this.flush();
      for (const segment of this.segments) closeSync(segment.acksFd);
      if (this.current !== undefined) closeSync(this.current.fd);
      this.current = undefined;
    } finally {
      this.lock.release();
    }
  }

  private currentSegment(): { segment: Segment; fd: number } {
    if (this.current !== undefined) return this.current;
    const start = this.nextSeq;
    const path = join(this.dir, `${String(start).padStart(16, "0")}.ndjson`);
    const fd = openOutputFile(path, "the spool segment", "truncate");
    const segment = this.track(start, path, 0, 0, new Uint8Array(SEGMENT_RECORDS), 0, "truncate");
    this.current = { segment, fd };
    return this.current;
  }

  private seal(): void {
    if (this.current === undefined) return;
    closeSync(this.current.fd);
    this.current.segment.sealed = true;
    this.current = undefined;
  }

  private track(start: number, path: string, records: number, bytes: number, ended: Uint8Array, endedCount: number, acks: "append" | "truncate"): Segment {
    const acksFd = openOutputFile(`${path}.acks`, "the spool's acks", acks);
    const segment: Segment = { start, path, records, bytes, ended, endedCount, acksFd, unwrittenAcks: "", sealed: false };
    this.segments.push(segment);
    return segment;
  }

  private segmentOf(seq: number): Segment | undefined {
    // Few segments live at once (each holds 10,000 records): a scan from the newest is enough.
    for (let index = this.segments.length - 1; index >= 0; index -= 1) {
      const segment = this.segments[index] as Segment;
      if (seq >= segment.start) return seq < segment.start + segment.records ? segment : undefined;
    }
    return undefined;
  }

  private remove(segment: Segment): void {
    closeSync(segment.acksFd);
    rmSync(segment.path, { force: true });
    rmSync(`${segment.path}.acks`, { force: true });
    this.segments.splice(this.segments.indexOf(segment), 1);
    this.liveBytes -= segment.bytes;
  }

  /** Reads the segments left by earlier runs; every one is sealed, and appends go to a new one. */
  private recover(): SpoolRecord[] {
    const unfinished: SpoolRecord[] = [];
    const names = readdirSync(this.dir)
      .filter((name) => SEGMENT_NAME.test(name))
      .sort();
    for (const name of names) {
      const start = Number((SEGMENT_NAME.exec(name) as RegExpExecArray)[1]);
      const path = join(this.dir, name);
      const text = readFileSync(path, "utf8");
      // A line without its newline was never synced whole, so never answered 200: cut it off.
      const whole = text.slice(0, text.lastIndexOf("\n") + 1);
      if (whole.length !== text.length) truncateFile(path, Buffer.byteLength(whole));
      const lines = whole === "" ? [] : whole.slice(0, -1).split("\n");
      const ended = new Uint8Array(Math.max(SEGMENT_RECORDS, lines.length));
      let endedCount = 0;
      for (const line of readAcks(`${path}.acks`)) {
        if (!/^\d+$/.test(line)) continue;
        const index = Number(line);
        if (Number.isInteger(index) && index >= 0 && index < lines.length && ended[index] === 0) {
          ended[index] = 1;
          endedCount += 1;
        }
      }
      const segment = this.track(start, path, lines.length, Buffer.byteLength(whole), ended, endedCount, "append");
      segment.sealed = true;
      this.liveBytes += segment.bytes;
      lines.forEach((line, index) => {
        if (ended[index] === 1) return;
        // NUL bytes are never part of a record (JSON escapes them): a run of them is a hole.
        const text = line.replace(/^\0+/, "");
        const problem = this.options.check?.(text);
        if (problem === undefined) unfinished.push({ seq: start + index, text });
        else this.quarantine(`${name} line ${index + 1}`, problem, line, segment, index);
      });
      this.liveRecords += lines.length - segment.endedCount;
      this.nextSeq = Math.max(this.nextSeq, start + lines.length);
    }
    for (const segment of [...this.segments]) if (segment.endedCount === segment.records) this.remove(segment);
    return unfinished;
  }

  /** Sets a record aside in the quarantine file and ends it in the spool. */
  private quarantine(where: string, reason: string, text: string, segment: Segment, index: number): void {
    const path = this.options.quarantinePath ?? join(this.dir, "quarantine.ndjson");
    try {
      appendFileSync(path, `${JSON.stringify({ at: new Date().toISOString(), where, reason, text })}\n`);
    } catch (error) {
      throw new OutputWriteError(`could not quarantine ${where} to ${path}: ${describeOutputError(error, path)}`, { cause: error });
    }
    segment.ended[index] = 1;
    segment.endedCount += 1;
    segment.unwrittenAcks += `${index}\n`;
    this.quarantined = { count: (this.quarantined?.count ?? 0) + 1, path };
  }
}

/** The ack file's whole lines; a partial last one (a write cut short by a full disk) is cut off. */
function readAcks(path: string): string[] {
  try {
    const text = readFileSync(path, "utf8");
    const whole = text.slice(0, text.lastIndexOf("\n") + 1);
    if (whole.length !== text.length) truncateFile(path, Buffer.byteLength(whole));
    return whole.split("\n");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

function truncateFile(path: string, length: number): void {
  const fd = openOutputFile(path, "the spool file", "append");
  try {
    if (fstatSync(fd).size > length) ftruncateSync(fd, length);
  } finally {
    closeSync(fd);
  }
}
