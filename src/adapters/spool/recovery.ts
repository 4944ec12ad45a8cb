import { appendFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { OutputWriteError } from "../../core/errors.js";
import { describeOutputError } from "../output-file.js";
import { readAcks, scanSegment } from "./files.js";
import type { Segment, Segments } from "./segments.js";

const SEGMENT_NAME = /^(\d{16})\.ndjson$/;

/** What recovery set aside: how many records, and the file that holds them. */
export interface Quarantined {
  count: number;
  path: string;
}

export interface RecoveryOptions {
  /**
   * Sees each record recovery finds still to deliver; says why it cannot be used (then it is
   * quarantined), or undefined when it can.
   */
  check?: ((text: string) => string | undefined) | undefined;
  /** Where quarantined records are appended, one JSON line each. */
  quarantinePath?: string | undefined;
}

/**
 * Scans the segments left by earlier runs in `dir`, a chunk at a time; every one is sealed, and
 * appends go to a new one. A record that cannot be read (a hole of NUL bytes left by an older wh,
 * a line that is not a record) is moved to the quarantine file instead of stopping the start.
 */
export async function recoverSegments(dir: string, segments: Segments, options: RecoveryOptions): Promise<Quarantined | undefined> {
  const quarantinePath = options.quarantinePath ?? join(dir, "quarantine.ndjson");
  let quarantined: Quarantined | undefined;
  const names = readdirSync(dir)
    .filter((name) => SEGMENT_NAME.test(name))
    .sort();
  for (const name of names) {
    const start = Number((SEGMENT_NAME.exec(name) as RegExpExecArray)[1]);
    const path = join(dir, name);
    const segment = segments.track(start, path, "append");
    segment.sealed = true;
    const acked = readAcks(`${path}.acks`);
    const scanned = await scanSegment(path, (line, index) => {
      if (acked.has(index)) return;
      const problem = options.check?.(line.replace(/^\0+/, ""));
      if (problem === undefined) return;
      quarantine(quarantinePath, `${name} line ${index + 1}`, problem, line);
      segments.fit(segment, index + 1);
      // grow() counts every record scanned as live once the scan ends: end() takes this one off.
      segments.end(segment, index, true);
      quarantined = { count: (quarantined?.count ?? 0) + 1, path: quarantinePath };
    });
    segments.grow(segment, scanned.records, scanned.bytes);
    endAcked(segments, segment, acked);
    segments.next = Math.max(segments.next, start + segment.records);
  }
  segments.removeEnded();
  return quarantined;
}

/** Marks ended the records the segment's ack file names (those not quarantined already). */
function endAcked(segments: Segments, segment: Segment, acked: Set<number>): void {
  for (const index of acked) if (index < segment.records && segment.ended[index] === 0) segments.end(segment, index, false);
}

/** Sets a record aside in the quarantine file. */
function quarantine(path: string, where: string, reason: string, text: string): void {
  try {
    appendFileSync(path, `${JSON.stringify({ at: new Date().toISOString(), where, reason, text })}\n`);
  } catch (error) {
    throw new OutputWriteError(`could not quarantine ${where} to ${path}: ${describeOutputError(error, path)}`, { cause: error });
  }
}
