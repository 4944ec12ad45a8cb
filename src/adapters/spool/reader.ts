import { open, type FileHandle } from "node:fs/promises";
import type { Spool, SpoolRecord } from "./spool.js";
import type { SegmentView } from "./segments.js";
import { CHUNK_BYTES } from "./files.js";

/**
 * Which records a reader hands over, decided without parsing them (SpoolFanout): records of
 * consumers that fell behind, or of other consumers, are passed over at the cost of a look at
 * their first bytes.
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
  /** Allocated at the first read from a file: a reader that stays caught up never needs it. */
  private buffer: Buffer | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;

  /**
   * `from`: the first record to hand over (earlier ones are passed over; the oldest record's, for
   * every record). `chunkBytes`: what it reads from a file at once (a longer record is read whole
   * all the same).
   */
  constructor(
    private readonly spool: Spool,
    private readonly from: number,
    private readonly select?: SpoolSelector,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {
    this.seq = from;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SpoolRecord[]> {
    try {
      for (;;) {
        const records = await this.read();
        if (records === undefined) return;
        if (records.length > 0) yield records;
      }
    } finally {
      await this.close();
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

  /** Closes the file it reads; reading again opens it again, at the same place. */
  async close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    this.buffer = undefined;
    await file?.close();
  }

  /**
   * The next records (perhaps none: a window of records ended or passed over); undefined once
   * stopped or the spool closed. Waits for a commit only once it has read every record there is.
   */
  async read(): Promise<SpoolRecord[] | undefined> {
    if (this.stopped) return undefined;
    const segment = this.spool.segmentFrom(this.seq);
    if (segment === undefined && this.seq < this.spool.nextSeq) {
      // Every record from here to the end ended and its segment was removed.
      this.seq = this.spool.nextSeq;
      return [];
    }
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
      // The segment before ended whole, or this is the first read (perhaps from the middle of a
      // segment, `from`): start at this one's top, passing over what comes before `from`.
      this.seq = segment.start;
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
    this.buffer ??= Buffer.alloc(this.chunkBytes);
    let buffer = this.buffer;
    let length = Math.min(end - this.offset, buffer.length);
    let filled = (await this.file.read(buffer, 0, length, this.offset)).bytesRead;
    while (buffer.lastIndexOf(10, filled - 1) === -1 && this.offset + filled < end) {
      // A record longer than the buffer: a bigger one, and read on.
      buffer = Buffer.concat([buffer, Buffer.alloc(buffer.length)]);
      this.buffer = buffer;
      length = Math.min(end - this.offset, buffer.length);
      filled += (await this.file.read(buffer, filled, length - filled, this.offset + filled)).bytesRead;
    }
    const records: SpoolRecord[] = [];
    let lineStart = 0;
    for (let newline = buffer.indexOf(10, 0); newline !== -1 && newline < filled; newline = buffer.indexOf(10, lineStart)) {
      const index = this.seq - segment.start;
      if (segment.ended[index] !== 1 && this.seq >= this.from) {
        // NUL bytes are never part of a record (JSON escapes them): a run of them is a hole an older wh left.
        let textStart = lineStart;
        while (textStart < newline && buffer[textStart] === 0) textStart += 1;
        if (this.select === undefined || this.select.line(buffer, textStart, newline))
          records.push({ seq: this.seq, text: buffer.toString("utf8", textStart, newline) });
      }
      this.seq += 1;
      lineStart = newline + 1;
    }
    this.offset += lineStart;
    return records;
  }
}
