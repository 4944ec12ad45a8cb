import { open, type FileHandle } from "node:fs/promises";
import type { Spool, SpoolRecord } from "./spool.js";
import type { SegmentView } from "./spool-segments.js";
import { CHUNK_BYTES } from "./spool-files.js";

/**
 * Which records a reader hands over, decided without parsing them: several readers share one
 * spool, each passing over the others' records at the cost of a look at their first bytes.
 */
export interface SpoolSelector {
  /** Whether the line `buffer[start, end)` read from a file is one to hand over. */
  line(buffer: Buffer, start: number, end: number): boolean;
  /** Whether a record handed over as it was committed is: its text, and what the appender attached to it. */
  committed(text: string, attached: unknown): boolean;
}

/**
 * Reads a spool's records in order, from the files, a window at a time: what waits is on disk,
 * never in memory. Records that ended meanwhile are passed over. Once it has caught up it is
 * handed each group as it is committed, without reading it back. It ends when the spool closes.
 */
export class SpoolReader implements AsyncIterable<SpoolRecord[]> {
  /** The next record to read, and where its line starts in its segment. */
  private seq: number;
  private segmentStart = -1;
  private offset = 0;
  private file: FileHandle | undefined;
  private buffer = Buffer.alloc(CHUNK_BYTES);
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly spool: Spool,
    from: number,
    private readonly select?: SpoolSelector,
  ) {
    this.seq = from;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SpoolRecord[]> {
    try {
      for (;;) {
        const records = await this.next();
        if (records === undefined) return;
        if (records.length > 0) yield records;
      }
    } finally {
      await this.file?.close();
      this.file = undefined;
    }
  }

  /** The next record it will read: the records before it were handed over (or had ended). */
  get position(): number {
    return this.seq;
  }

  /** Ends the reading: the iteration returns (at once if it waits for records). */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** The next records (perhaps none, when all of a window had ended); undefined once stopped or the spool closed. */
  private async next(): Promise<SpoolRecord[] | undefined> {
    if (this.stopped) return undefined;
    const segment = this.spool.segmentFrom(this.seq);
    if (segment === undefined) {
      const stopping = new Promise<undefined>((resolve) => {
        this.wake = () => resolve(undefined);
      });
      const committed = await Promise.race([this.spool.nextCommit(), stopping]);
      this.wake = undefined;
      if (committed === undefined || this.stopped) return undefined;
      if (committed.first !== this.seq) return [];
      // Caught up: the group that was just written, as it is in memory.
      void this.moveTo(committed.segment);
      this.offset += committed.bytes;
      const first = this.seq;
      this.seq += committed.texts.length;
      const records: SpoolRecord[] = [];
      committed.texts.forEach((text, index) => {
        const attached = committed.attached[index];
        if (this.select === undefined || this.select.committed(text, attached)) records.push({ seq: first + index, text, attached });
      });
      return records;
    }
    if (segment.start !== this.segmentStart) {
      // The segment before ended whole (or this is the first read): start at this one's top.
      this.seq = Math.max(this.seq, segment.start);
      await this.moveTo(segment);
    }
    return this.readWindow(segment);
  }

  private moveTo(segment: SegmentView): Promise<void> | undefined {
    if (segment.start === this.segmentStart) return undefined;
    this.segmentStart = segment.start;
    this.offset = 0;
    const previous = this.file;
    this.file = undefined;
    return previous?.close();
  }

  /** Reads whole lines from `offset` up to the segment's synced end, at most a chunk (or one longer record). */
  private async readWindow(segment: SegmentView): Promise<SpoolRecord[]> {
    this.file ??= await open(segment.path, "r");
    const end = segment.bytes;
    if (this.offset >= end) return [];
    let length = Math.min(end - this.offset, this.buffer.length);
    let filled = (await this.file.read(this.buffer, 0, length, this.offset)).bytesRead;
    while (this.buffer.lastIndexOf(10, filled - 1) === -1 && this.offset + filled < end) {
      // A record longer than the buffer: a bigger one, and read on.
      this.buffer = Buffer.concat([this.buffer, Buffer.alloc(this.buffer.length)]);
      length = Math.min(end - this.offset, this.buffer.length);
      filled += (await this.file.read(this.buffer, filled, length - filled, this.offset + filled)).bytesRead;
    }
    const records: SpoolRecord[] = [];
    let lineStart = 0;
    for (let newline = this.buffer.indexOf(10, 0); newline !== -1 && newline < filled; newline = this.buffer.indexOf(10, lineStart)) {
      const index = this.seq - segment.start;
      if (segment.ended[index] !== 1) {
        // NUL bytes are never part of a record (JSON escapes them): a run of them is a hole an older wh left.
        let from = lineStart;
        while (from < newline && this.buffer[from] === 0) from += 1;
        if (this.select === undefined || this.select.line(this.buffer, from, newline))
          records.push({ seq: this.seq, text: this.buffer.toString("utf8", from, newline) });
      }
      this.seq += 1;
      lineStart = newline + 1;
    }
    this.offset += lineStart;
    return records;
  }
}
