import { join } from "node:path";
import { AppendFile } from "../../adapters/append-file.js";
import { Spool, type SpoolRecord } from "../../adapters/spool/spool.js";
import { deadLetterFileName, removeSpoolDeadLetters } from "../../adapters/spool/dead-letters.js";
import type { Quarantined } from "../../adapters/spool/recovery.js";
import type { SpoolSelector } from "../../adapters/spool/reader.js";
import { type LaneRouter, SpoolFanout } from "../../adapters/spool/fanout.js";
import type { Destination } from "../../config/resolve.js";
import { OutputWriteError } from "../../core/errors.js";
import type { Registry } from "../../core/prometheus.js";
import type { DeliveryJob, FinishedLog } from "../delivery-job.js";
import type { EventStore } from "./event-store.js";
import { readStored, sourceTag, storedText, type AcceptedEvent, type JobInput, type JobMaker, type StoredEvent } from "./stored-event.js";

export interface SpoolStoreOptions {
  dataDir: string;
  maxBytes: number;
  /** Sees each event recovery finds still to deliver (for the duplicate window). */
  onRecovered: (stored: StoredEvent) => void;
  onWarning?: ((message: string) => void) | undefined;
}

/**
 * The local spool as wh serve's store: accepted events are appended (group-committed, synced)
 * before the 200; each forwarder reads its source's events from the files a window at a time, so
 * the backlog waits on disk; dead letters go to a file per source in the data directory.
 */
export class SpoolStore implements EventStore {
  /** The reading that feeds the forwarders, once feed() started it. */
  private reading: { lag(): number; stop(): void } | undefined;
  /**
   * Whether an accepted event's forwarder takes it as it is committed (several sources: its lane
   * is fed). One that is behind reads it from the file later: handed its parsed event now, the
   * spool would keep the request's objects alive until the fsync for nothing, and the collector
   * would promote them (100 sources with one webhook down, all events to it: 1.52x one source's
   * CPU per event, bench/serve-sources.js).
   */
  private takesNow: ((event: AcceptedEvent) => boolean) | undefined;
  /**
   * Every forwarder's journal: an ended job's record is acked in the spool, by its number (its
   * seq). Never broken: an ack that cannot be written (a full disk) is held and written at a later
   * flush. Until then a restart would deliver those events again, a duplicate and not a loss; and
   * a segment whose every record has ended is removed all the same, which frees the disk.
   */
  private readonly journal: FinishedLog = {
    markFinished: ({ number }) => this.spool.markFinished(number),
    flush: () => this.spool.flush(),
    broken: undefined,
  };

  private constructor(
    private readonly spool: Spool,
    readonly recovered: number,
    private readonly quarantined: Quarantined | undefined,
    private readonly dataDir: string,
  ) {}

  static async open(options: SpoolStoreOptions): Promise<SpoolStore> {
    const putBack = new Set<string>();
    const check = (text: string): string | undefined => {
      const stored = readStored(text);
      if (typeof stored === "string") return stored;
      if (stored.deadLetter !== undefined) putBack.add(stored.deadLetter);
      options.onRecovered(stored);
      return undefined;
    };
    const { spool, recovered, quarantined } = await Spool.open(join(options.dataDir, "spool"), {
      maxBytes: options.maxBytes,
      check,
      quarantinePath: join(options.dataDir, "quarantine.ndjson"),
    });
    try {
      // A dead-letters replay stopped after putting letters back, before taking them out of their
      // files: finished here, before anything is delivered, so none is put back (and sent) twice.
      if (putBack.size > 0) removeSpoolDeadLetters(options.dataDir, putBack);
    } catch (error) {
      spool.close();
      throw error;
    }
    if (quarantined !== undefined) {
      options.onWarning?.(
        `the spool held ${quarantined.count} unreadable record${quarantined.count === 1 ? "" : "s"}: moved to ${quarantined.path}; every other event is delivered`,
      );
    }
    return new SpoolStore(spool, recovered, quarantined, options.dataDir);
  }

  /**
   * Not an async function: its frame would hold `events` (and through them the request's parsed
   * body) until the fsync; the spool holds them only for readers that will take them.
   */
  append(events: readonly AcceptedEvent[]): Promise<string | undefined> {
    const texts = events.map((event) => event.text);
    if (this.full(texts)) return Promise.resolve(`the spool is full (${this.spool.bytes} bytes, --max-spool); retry later`);
    // Forwarders that wait at the spool's end are handed the events as they are, prepared already.
    const takesNow = this.takesNow;
    const attached = takesNow === undefined ? events : events.map((event) => (takesNow(event) ? event : undefined));
    return this.spool.append(texts, attached).then(
      () => undefined,
      (error: unknown) => {
        if (!(error instanceof OutputWriteError)) throw error;
        return `${error.message}; retry later`;
      },
    );
  }

  /**
   * Whether the records would pass --max-spool. A UTF-16 code unit is at most 3 bytes of UTF-8, so
   * their lengths settle it unless the spool is near its limit: counting their bytes flattens each
   * record's text (built of pieces, storedText) into a copy, 1.4 us an event of 1 KB.
   */
  private full(texts: readonly string[]): boolean {
    return (
      this.spool.full(texts.reduce((sum, text) => sum + text.length * 3 + 1, 0)) &&
      this.spool.full(texts.reduce((sum, text) => sum + Buffer.byteLength(text) + 1, 0))
    );
  }

  /**
   * Puts dead letters back to be delivered (`wh serve dead-letters replay`): appended and synced,
   * each to the subscriptions its record names alone when it names some. Each record names its
   * dead letter: the caller takes them out of their files once this resolves, and a crash between
   * the two is finished by the next open (above) instead of putting them back again.
   */
  async putBack(
    letters: readonly { id: string; source: string | null; event: Record<string, unknown>; record: { subscriptions?: string[] | undefined } }[],
  ): Promise<void> {
    if (letters.length === 0) return;
    await this.spool.append(
      letters.map(({ id, source, event, record: { subscriptions } }) =>
        storedText({ source, event, deadLetter: id, ...(subscriptions === undefined ? {} : { subscriptions }) }),
      ),
    );
  }

  logs(destination: Destination): { journal: FinishedLog; deadLetter: AppendFile; close(): void } {
    const name = deadLetterFileName(destination.source ?? null);
    const file = AppendFile.open(join(this.dataDir, name), "the dead-letter file", "append");
    return { journal: this.journal, deadLetter: file, close: () => file.close() };
  }

  /**
   * One source: a reader of every record. Several: one reader for all (a fanout), each record
   * read once and handed to its source's forwarder (sourceRouter).
   */
  feed(destinations: readonly Destination[], makeJob: JobMaker): Map<Destination, JobInput> {
    const [only] = destinations;
    if (destinations.length === 1 && only !== undefined) {
      const reader = this.spool.reader();
      this.reading = { lag: () => this.spool.nextSeq - reader.position, stop: () => reader.stop() };
      return new Map([[only, { jobs: jobsOf(reader, only, makeJob, true), stop: () => reader.stop() }]]);
    }
    const router = sourceRouter(destinations);
    const fanout = new SpoolFanout(this.spool, router, destinations.length, (lane) => laneSelector(router, lane));
    this.reading = fanout;
    this.takesNow = (event) => fanout.isFed(router.laneOfSource(event.stored.source));
    return new Map(
      destinations.map((destination, index) => {
        const lane = fanout.lane(index);
        return [destination, { jobs: jobsOf(lane, destination, makeJob, index === 0), stop: () => lane.stop() }];
      }),
    );
  }

  lag(): number {
    return this.reading?.lag() ?? 0;
  }

  backlog(): number {
    return this.spool.depth;
  }

  health(): Record<string, unknown> {
    return { spool: { depth: this.spool.depth, bytes: this.spool.bytes, ...(this.quarantined === undefined ? {} : { quarantined: this.quarantined }) } };
  }

  addMetrics(registry: Registry): void {
    registry.gauge("wh_serve_spool_depth", "Events accepted and not yet ended.", () => this.spool.depth);
    registry.gauge("wh_serve_spool_bytes", "Bytes of the spool's files.", () => this.spool.bytes);
  }

  async refreshMetrics(): Promise<void> {
    // Every figure is in memory.
  }

  async close(): Promise<void> {
    this.reading?.stop();
    this.spool.close();
  }
}

/** Every stored record starts so (sourceTag), whatever its source. */
const TAG_START = '{"source":';

/**
 * The lanes of a spool fanout for the sources (one per destination, in order), told by a
 * record's first bytes (sourceTag) without parsing it. The first lane also takes records of a
 * source the config no longer has (its jobMaker makes them invalid, dead-lettered once) and
 * records that cannot be read. A name with an escape in it is read by a parse.
 */
function sourceRouter(destinations: readonly Destination[]): LaneRouter & { laneOfSource(source: string | null): number } {
  const laneByName = new Map(destinations.map((destination, index) => [destination.source ?? null, index]));
  const laneByTag = new Map(destinations.map((destination, index) => [sourceTag(destination.source ?? null), index]));
  // A line's first bytes as long as the longest tag: a longer name is no source's, and tells
  // from its text alone (its tag is cut short here).
  const tagBytes = Math.max(...[...laneByTag.keys()].map((tag) => Buffer.byteLength(tag)));
  const laneOfTag = (tag: string | undefined): number | undefined => (tag === undefined ? undefined : (laneByTag.get(tag) ?? 0));
  const laneOfSource = (source: string | null): number => laneByName.get(source) ?? 0;
  return {
    laneOfSource,
    line: (buffer, start, end) => laneOfTag(tagOf(buffer.toString("utf8", start, Math.min(end, start + tagBytes)))),
    record(text, attached) {
      const held = attached as AcceptedEvent | undefined;
      if (held !== undefined) return laneOfSource(held.stored.source);
      const lane = laneOfTag(tagOf(text));
      if (lane !== undefined) return lane;
      const stored = readStored(text);
      return typeof stored === "string" ? 0 : laneOfSource(stored.source);
    },
  };
}

/** What a lane's own reader keeps: the records the router sends to the lane, and those only a parse tells (jobsOf drops what is not its). */
function laneSelector(router: LaneRouter, lane: number): SpoolSelector {
  return {
    line(buffer, start, end) {
      const routed = router.line(buffer, start, end);
      return routed === undefined || routed === lane;
    },
    committed: (text, attached) => router.record(text, attached) === lane,
  };
}

/** The tag (sourceTag) a record's text starts with; undefined when it has none or its name holds an escape, which only a parse reads right. */
function tagOf(text: string): string | undefined {
  if (!text.startsWith(TAG_START)) return undefined;
  if (text.startsWith("null,", TAG_START.length)) return text.slice(0, TAG_START.length + "null,".length);
  if (text.charCodeAt(TAG_START.length) !== 0x22) return undefined;
  const close = text.indexOf('"', TAG_START.length + 1);
  if (close === -1 || text.charCodeAt(close + 1) !== 0x2c || text.lastIndexOf("\\", close) > TAG_START.length) return undefined;
  return text.slice(0, close + 2);
}

/**
 * A destination's jobs from a spool reader: the events of its source (makeJob says whose each is),
 * and, for the first destination (`strays`), records that cannot be read, to be dead-lettered once.
 */
async function* jobsOf(reader: AsyncIterable<SpoolRecord[]>, destination: Destination, makeJob: JobMaker, strays: boolean): AsyncIterable<DeliveryJob[]> {
  for await (const records of reader) {
    const jobs: DeliveryJob[] = [];
    for (const record of records) {
      const held = record.attached as AcceptedEvent | undefined;
      const stored = held?.stored ?? readStored(record.text);
      if (typeof stored === "string") {
        if (strays)
          jobs.push({
            number: record.seq,
            original: record.text,
            prepared: { ok: false, kind: "invalid-message", error: `the spool's record cannot be read: ${stored}` },
            label: `record ${record.seq}`,
          });
        continue;
      }
      const made = makeJob(record.seq, stored, held?.prepared);
      if (made.destination === destination) jobs.push(made.job);
    }
    if (jobs.length > 0) yield jobs;
  }
}
