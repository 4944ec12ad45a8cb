import type { Spool, SpoolRecord } from "./spool.js";
import type { SpoolReader, SpoolSelector } from "./reader.js";

/** Which lane (consumer) each record of a spool several consumers share is for. */
export interface LaneRouter {
  /** The lane of a record read from a file, told from its first bytes `buffer[start, end)`; undefined when only its text tells. */
  line(buffer: Buffer, start: number, end: number): number | undefined;
  /** The lane of a record handed over: from what the appender attached to it, else from its text. */
  record(text: string, attached: unknown): number;
}

/**
 * Records a lane holds for its consumer. A consumer that leaves more waiting (its webhook down or
 * slow) falls behind: the shared reader passes over its records, and it reads them alone later.
 */
const LANE_RECORDS = 256;

/**
 * Records all the lanes hold together before each is held to its share of them (at most twice
 * this in all, whatever the number of lanes). A lane whose webhook is down keeps what it holds
 * until it comes back: 100 such lanes holding 256 each kept 25,600 accepted events alive, and wh
 * serve's peak RSS at 350 MB against one source's 145 (250 MB with the shared budget). A burst to
 * one lane, or a commit spread over 100 lanes (16 requests of 100 events: 16 a lane), still fits.
 */
const SHARED_RECORDS = 2_048;

/**
 * What a lane reading alone reads from a file at once: each of 100 lanes behind held a reader's
 * 1 MB buffer (wh serve's RSS grew by what many lanes behind held); a record longer than this is
 * read whole all the same.
 */
const LANE_CHUNK_BYTES = 64 * 1024;

/**
 * One reader over a spool for many consumers (wh serve's sources): each record is read once and
 * handed to its lane, where it used to be read (and looked at) once per consumer. A lane whose
 * consumer does not keep up falls behind: from that record on it reads alone, with a reader of
 * its own from where it fell behind (memory stays bounded: what waits is on disk), and once that
 * reader reaches the shared one the lane is fed by the shared reader again. A lane's records
 * come in order either way.
 */
export class SpoolFanout {
  private readonly shared: SpoolReader;
  private readonly lanes: Lane[];
  /**
   * What a lane may hold once the lanes hold SHARED_RECORDS together, and the most it hands its
   * consumer at once: a consumer stops in the middle of what it was handed while its runner has no
   * room (its webhook down) and keeps the rest alive, out of the lanes' count. Handed its queue
   * whole (a request's 100 events), each of 100 such sources kept 65 alive beside the 35 it had
   * in flight and queued.
   */
  readonly share: number;
  /** Records the lanes hold, together. */
  private held = 0;
  /** Lanes behind: while all are, the shared reader waits (resumeReading) instead of reading. */
  private lanesBehind = 0;
  private resumeReading: (() => void) | undefined;
  /** Why the shared reader stopped, when it failed: every lane's consumer is told. */
  failure: unknown;

  constructor(
    readonly spool: Spool,
    router: LaneRouter,
    count: number,
    /** What a lane's own reader keeps, told from the first bytes (its consumer drops what is not its). */
    ownSelector: (lane: number) => SpoolSelector,
  ) {
    this.lanes = Array.from({ length: count }, (_, index) => new Lane(this, ownSelector(index)));
    this.share = Math.max(1, Math.floor(SHARED_RECORDS / count));
    this.shared = spool.reader({
      line: (buffer, start, end) => this.takes(router.line(buffer, start, end)),
      committed: (text, attached) => this.takes(router.record(text, attached)),
    });
    void this.dispatch(router);
  }

  /** The records of lane `index`, in order. */
  lane(index: number): Lane {
    return this.lanes[index] as Lane;
  }

  /** The next record the shared reader reads. */
  get position(): number {
    return this.shared.position;
  }

  /**
   * Records stored and not yet handed to their consumer, for the consumer furthest behind (its own
   * records, not every record since), and those the shared reader has not read yet (while every
   * lane is behind it waits, and any of them may be the furthest behind's).
   */
  lag(): number {
    return this.lanes.reduce((most, lane) => Math.max(most, lane.waiting), 0) + (this.spool.nextSeq - this.shared.position);
  }

  /** Whether a lane holding `queued` records may take one more. */
  hasRoom(queued: number): boolean {
    return queued < LANE_RECORDS && (this.held < SHARED_RECORDS || queued < this.share);
  }

  /** The lanes hold `count` records more (fewer, when negative). */
  hold(count: number): void {
    this.held += count;
  }

  /** A lane fell behind (true) or was fed again (false). */
  laneBehind(behind: boolean): void {
    this.lanesBehind += behind ? 1 : -1;
    if (!behind) this.resumeReading?.();
  }

  /** Whether lane `index` takes what the shared reader reads now: false while it is behind (its records are read alone, later). */
  isFed(index: number): boolean {
    return this.lanes[index]?.behind !== true;
  }

  stop(): void {
    this.shared.stop();
    for (const lane of this.lanes) lane.stop();
    this.resumeReading?.();
  }

  /** Whether the shared reader makes a record of a record of `lane`: not while the lane is behind (nor a string of its line). */
  private takes(lane: number | undefined): boolean {
    const behind = lane === undefined ? undefined : this.lanes[lane];
    if (behind?.behind !== true) return true;
    behind.passOver();
    return false;
  }

  private async dispatch(router: LaneRouter): Promise<void> {
    try {
      for (;;) {
        // Every lane behind (each source's webhook down): what the shared reader read would be
        // passed over, and a reader waiting at the spool's end for each commit made the
        // collector promote every request's objects (1 source with such a reader beside its
        // own: 21.4 µs an event against 14.7). It reads on once a lane is fed again; the lanes
        // read alone up to where it stopped.
        if (this.lanesBehind === this.lanes.length) {
          await new Promise<void>((resolve) => {
            this.resumeReading = resolve;
          });
          this.resumeReading = undefined;
        }
        const records = await this.shared.read();
        if (records === undefined) break;
        for (const record of records) this.lanes[router.record(record.text, record.attached)]?.offer(record);
      }
    } catch (error) {
      this.failure = error;
    } finally {
      await this.shared.close();
      for (const lane of this.lanes) lane.end();
    }
  }
}

/** One consumer's records: handed by the shared reader while it keeps up, read alone while it is behind. */
class Lane implements AsyncIterable<SpoolRecord[]> {
  private queue: SpoolRecord[] = [];
  /** The first of its records the shared reader passed over (its queue was full); undefined while it is fed. */
  private behindAt: number | undefined;
  /** The shared reader's records before it were read by the lane's own reader: passed over. */
  private fedFrom = 0;
  /** About how many of its records the shared reader passed over while it was behind, not yet read alone. */
  private passed = 0;
  private own: SpoolReader | undefined;
  private wake: (() => void) | undefined;
  private ended = false;
  private stopped = false;

  constructor(
    private readonly fanout: SpoolFanout,
    private readonly select: SpoolSelector,
  ) {}

  get behind(): boolean {
    return this.behindAt !== undefined;
  }

  /** Its records stored and not yet handed to its consumer. */
  get waiting(): number {
    return this.queue.length + this.passed;
  }

  /** The shared reader passed over one of its records (it is behind). */
  passOver(): void {
    this.passed += 1;
  }

  /** A record of the lane from the shared reader. */
  offer(record: SpoolRecord): void {
    if (record.seq < this.fedFrom) return;
    if (this.behindAt === undefined && !this.fanout.hasRoom(this.queue.length)) {
      this.behindAt = record.seq;
      this.fanout.laneBehind(true);
    }
    if (this.behindAt !== undefined) {
      this.passOver();
      return;
    }
    this.queue.push(record);
    this.fanout.hold(1);
    this.wake?.();
  }

  /** The shared reader ended (the spool closed, or it failed). */
  end(): void {
    this.ended = true;
    this.wake?.();
  }

  /** Ends the lane's iteration (at once if it waits for records). */
  stop(): void {
    this.stopped = true;
    this.own?.stop();
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SpoolRecord[]> {
    try {
      for (;;) {
        if (this.stopped) return;
        if (this.queue.length > 0) {
          const records = this.queue.splice(0, this.fanout.share);
          this.fanout.hold(-records.length);
          yield records;
          continue;
        }
        if (this.behindAt !== undefined) {
          const records = await this.readAlone(this.behindAt);
          if (records === undefined) return;
          if (records.length > 0) yield records;
          continue;
        }
        if (this.ended) {
          if (this.fanout.failure !== undefined) throw this.fanout.failure;
          return;
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } finally {
      await this.own?.close();
    }
  }

  /** Reads on alone from where the lane fell behind; once level with the shared reader, is fed by it again. */
  private async readAlone(from: number): Promise<SpoolRecord[] | undefined> {
    this.own ??= this.fanout.spool.reader(this.select, from, LANE_CHUNK_BYTES);
    if (this.own.position < this.fanout.position) {
      const records = await this.own.read();
      this.passed = Math.max(0, this.passed - (records?.length ?? 0));
      return records;
    }
    // Level: the shared reader has read nothing past the own reader's position that the lane has
    // not been handed, and what it read before it (perhaps not yet handed out) is passed over.
    this.fedFrom = this.own.position;
    this.behindAt = undefined;
    this.fanout.laneBehind(false);
    this.passed = 0;
    const own = this.own;
    this.own = undefined;
    await own.close();
    return [];
  }
}
