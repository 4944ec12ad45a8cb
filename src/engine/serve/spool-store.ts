import { join } from "node:path";
import { AppendFile } from "../../adapters/append-file.js";
import { Spool } from "../../adapters/spool.js";
import { deadLetterFileName, removeSpoolDeadLetters } from "../../adapters/spool-dead-letters.js";
import type { Quarantined } from "../../adapters/spool-recovery.js";
import type { SpoolReader, SpoolSelector } from "../../adapters/spool-reader.js";
import type { Destination } from "../../config/resolve.js";
import { OutputWriteError } from "../../core/errors.js";
import type { Registry } from "../../core/prometheus.js";
import type { DeliveryJob } from "../delivery-job.js";
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
  private readonly readers: SpoolReader[] = [];

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

  async append(events: readonly AcceptedEvent[]): Promise<string | undefined> {
    const texts = events.map((event) => event.text);
    if (this.spool.full(texts.reduce((sum, text) => sum + Buffer.byteLength(text) + 1, 0)))
      return `the spool is full (${this.spool.bytes} bytes, --max-spool); retry later`;
    try {
      // Forwarders that wait at the spool's end are handed the events as they are, prepared already.
      await this.spool.append(texts, events);
    } catch (error) {
      if (!(error instanceof OutputWriteError)) throw error;
      return `${error.message}; retry later`;
    }
    return undefined;
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

  logs(destination: Destination): { journal: Spool; deadLetter: AppendFile; close(): void } {
    const name = deadLetterFileName(destination.source ?? null);
    const file = AppendFile.open(join(this.dataDir, name), "the dead-letter file", "append");
    return { journal: this.spool, deadLetter: file, close: () => file.close() };
  }

  feed(destinations: readonly Destination[], makeJob: JobMaker): Map<Destination, JobInput> {
    return new Map(
      destinations.map((destination) => {
        const reader = this.spool.reader(destinations.length === 1 ? undefined : sourceSelector(destination, destinations));
        this.readers.push(reader);
        return [destination, { jobs: jobsOf(reader, destination, makeJob, destination === destinations[0]), stop: () => reader.stop() }];
      }),
    );
  }

  lag(): number {
    return this.readers.reduce((most, reader) => Math.max(most, this.spool.nextSeq - reader.position), 0);
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
    for (const reader of this.readers) reader.stop();
    this.spool.close();
  }
}

/** Every stored record starts so (sourceTag), whatever its source. */
const TAG_START = Buffer.from('{"source":');

/**
 * The records a destination's reader hands over, told by their first bytes (sourceTag): its
 * source's; for the first destination also those of a source the config no longer has (its
 * jobMaker makes them invalid, dead-lettered once); and any record that does not start with a
 * tag, parsed to find out (jobsOf keeps it only if it is the destination's). So one record costs
 * one parse whatever the number of sources, where every reader used to parse every record.
 */
function sourceSelector(destination: Destination, destinations: readonly Destination[]): SpoolSelector {
  const own = destination.source ?? null;
  const ownTag = Buffer.from(sourceTag(own));
  const strays = destination === destinations[0];
  const known = new Set(destinations.map((each) => each.source ?? null));
  const knownTags = new Set(destinations.map((each) => sourceTag(each.source ?? null)));
  const startsWith = (buffer: Buffer, start: number, end: number, tag: Buffer) =>
    end - start >= tag.length && buffer.compare(tag, 0, tag.length, start, start + tag.length) === 0;
  return {
    line(buffer, start, end) {
      if (startsWith(buffer, start, end, ownTag) || !startsWith(buffer, start, end, TAG_START)) return true;
      if (!strays) return false;
      const tag = tagAt(buffer, start, end);
      return tag === undefined || !knownTags.has(tag);
    },
    committed(_text, attached) {
      const source = (attached as AcceptedEvent | undefined)?.stored.source;
      return source === undefined || source === own || (strays && !known.has(source));
    },
  };
}

/** The tag (sourceTag) the line at `start` starts with; undefined when its name holds an escape, which only a parse reads right. */
function tagAt(buffer: Buffer, start: number, end: number): string | undefined {
  let at = start + TAG_START.length;
  if (buffer[at] === 0x22) {
    for (at += 1; at < end && buffer[at] !== 0x22; at += 1) if (buffer[at] === 0x5c) return undefined;
    at += 1;
  } else at += "null".length;
  return at < end && buffer[at] === 0x2c ? buffer.toString("utf8", start, at + 1) : undefined;
}

/**
 * A destination's jobs from a spool reader: the events of its source (makeJob says whose each is),
 * and, for the first destination (`strays`), records that cannot be read, to be dead-lettered once.
 */
async function* jobsOf(reader: SpoolReader, destination: Destination, makeJob: JobMaker, strays: boolean): AsyncIterable<DeliveryJob[]> {
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
