import { closeSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { openOutputFile } from "../output-file.js";

/** Records per segment file: a segment is removed once every record in it has ended. */
const SEGMENT_RECORDS = 10_000;

/** A segment file as readers see it: where its records start, how many are whole on disk, which ended. */
export interface SegmentView {
  readonly start: number;
  readonly path: string;
  readonly records: number;
  readonly bytes: number;
  readonly ended: Uint8Array;
}

export interface Segment extends SegmentView {
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
 * The spool's segment files (`<first seq>.ndjson`), each with its ack file (`.acks`, the indexes
 * of the records that ended), and one bit per record: whether it ended. Appends go to the
 * current segment until it holds SEGMENT_RECORDS; a sealed segment whose every record ended is
 * removed.
 */
export class Segments {
  private readonly list: Segment[] = [];
  private current: { segment: Segment; fd: number } | undefined;
  /** The sequence number the next record will get. */
  next = 0;
  /** Bytes of the segments on disk. */
  liveBytes = 0;
  /** Records accepted and not yet ended. */
  liveRecords = 0;

  constructor(private readonly dir: string) {}

  /** The oldest record's sequence number (the next one's when none is left). */
  get first(): number {
    return this.list[0]?.start ?? this.next;
  }

  /** The segment holding `seq`, or else the first after it; undefined past the end. */
  from(seq: number): SegmentView | undefined {
    return this.list.find((segment) => seq < segment.start + segment.records);
  }

  /** The segment appends go to, and its file; a new one after the last was sealed. */
  currentSegment(): { segment: Segment; fd: number } {
    if (this.current !== undefined) return this.current;
    const start = this.next;
    const path = join(this.dir, `${String(start).padStart(16, "0")}.ndjson`);
    const fd = openOutputFile(path, "the spool segment", "truncate");
    const segment = this.track(start, path, "truncate");
    this.current = { segment, fd };
    return this.current;
  }

  /** Closes the current segment's file: appends go to a new one. */
  seal(): void {
    if (this.current === undefined) return;
    closeSync(this.current.fd);
    this.current.segment.sealed = true;
    this.current = undefined;
  }

  /** A segment file to keep track of; its ack file is opened (appended to when recovered). */
  track(start: number, path: string, acks: "append" | "truncate"): Segment {
    const acksFd = openOutputFile(`${path}.acks`, "the spool's acks", acks);
    const segment: Segment = {
      start,
      path,
      records: 0,
      bytes: 0,
      ended: new Uint8Array(SEGMENT_RECORDS),
      endedCount: 0,
      acksFd,
      unwrittenAcks: "",
      sealed: false,
    };
    this.list.push(segment);
    return segment;
  }

  /** Counts records written whole to the segment; a full current segment is sealed. */
  grow(segment: Segment, added: number, bytes: number): void {
    this.fit(segment, segment.records + added);
    segment.records += added;
    segment.bytes += bytes;
    this.next = segment.start + segment.records;
    this.liveBytes += bytes;
    this.liveRecords += added;
    if (segment === this.current?.segment && segment.records >= SEGMENT_RECORDS) this.seal();
  }

  /** Makes room for `records` bits in the segment's ended marks. */
  fit(segment: Segment, records: number): void {
    if (records <= segment.ended.length) return;
    const grown = new Uint8Array(records);
    grown.set(segment.ended);
    segment.ended = grown;
  }

  /** Marks the record `seq` ended, once; its ack is written at the next flush. */
  markFinished(seq: number): void {
    const segment = this.from(seq) as Segment | undefined;
    if (segment === undefined || seq < segment.start) return;
    const index = seq - segment.start;
    if (segment.ended[index] === 1) return;
    this.end(segment, index, true);
  }

  /** Marks a record ended; `unwritten`: its ack is still to be written to the ack file. */
  end(segment: Segment, index: number, unwritten: boolean): void {
    segment.ended[index] = 1;
    segment.endedCount += 1;
    this.liveRecords -= 1;
    if (unwritten) segment.unwrittenAcks += `${index}\n`;
  }

  /** Writes the acks recorded so far, and removes the segments whose every record has ended. */
  flush(): void {
    for (const segment of [...this.list]) {
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

  /** Removes the segments (found on recovery) whose every record has ended. */
  removeEnded(): void {
    for (const segment of [...this.list]) if (segment.endedCount === segment.records) this.remove(segment);
  }

  /** Seals the current segment, writes what acks it can, and closes every ack file. */
  close(): void {
    this.seal();
    this.flush();
    for (const segment of this.list) closeSync(segment.acksFd);
  }

  private remove(segment: Segment): void {
    closeSync(segment.acksFd);
    rmSync(segment.path, { force: true });
    rmSync(`${segment.path}.acks`, { force: true });
    this.list.splice(this.list.indexOf(segment), 1);
    this.liveBytes -= segment.bytes;
  }
}
