import type { Hash } from "node:crypto";
import type { Readable } from "node:stream";
import { decodeUtf8, NOT_UTF8 } from "./utf8.js";

export interface InputLine {
  /** 1-based line number in the input. */
  number: number;
  /** The line without its line ending (and without a leading BOM on line 1); the start of an overlong line. */
  text: string;
  /** Why the line cannot be a message, found while reading: invalid UTF-8, or far too long. */
  problem?: string;
}

/** Lines longer than this cannot be a message (one message is at most 32 KB): only their start is kept. */
export const MAX_LINE_BYTES = 1024 * 1024;
/** How much of an overlong line is kept, for the dead-letter file. */
const KEPT_BYTES = 1024;

const NEWLINE = 0x0a;

export interface ReadLinesOptions {
  /** Every byte read is fed to this hash (the input's digest, for the journal). */
  digest?: Hash | undefined;
  /** Counts the bytes read, for progress. */
  counter?: { bytes: number } | undefined;
}

/**
 * Streams lines from bytes without holding more than one chunk and one partial line, a chunk's
 * lines at a time (one await per chunk, not per line, on the hot path of replay). Splitting on
 * the newline byte before decoding keeps multi-byte characters whole across chunks. A line that
 * grows past MAX_LINE_BYTES stops being buffered (its start is kept and its length counted), so
 * memory stays bounded and time linear whatever the input holds.
 */
export async function* readLineBatches(stream: Readable, options: ReadLinesOptions = {}): AsyncGenerator<InputLine[]> {
  const partial = new PartialLine();
  let number = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      options.digest?.update(chunk);
      if (options.counter !== undefined) options.counter.bytes += chunk.length;
      const batch: InputLine[] = [];
      let start = 0;
      let end = chunk.indexOf(NEWLINE, start);
      while (end !== -1) {
        number += 1;
        batch.push(partial.empty ? decode(chunk.subarray(start, end), number) : partial.finish(chunk.subarray(start, end), number));
        start = end + 1;
        end = chunk.indexOf(NEWLINE, start);
      }
      if (start < chunk.length) partial.add(chunk.subarray(start));
      if (batch.length > 0) yield batch;
    }
  } catch (error) {
    // The reader destroyed the stream on purpose (Ctrl-C): that is the end of the input.
    if (stream.destroyed && (error as NodeJS.ErrnoException).code === "ERR_STREAM_PREMATURE_CLOSE") return;
    throw error;
  }
  if (!partial.empty) yield [partial.finish(Buffer.alloc(0), number + 1)];
}

/** The lines of a stream one by one (see readLineBatches). */
export async function* readLines(stream: Readable): AsyncGenerator<InputLine> {
  for await (const batch of readLineBatches(stream)) yield* batch;
}

/** The start of a line that spans chunks: its pieces, joined once when the line ends. */
class PartialLine {
  private pieces: Buffer[] = [];
  private bytes = 0;

  get empty(): boolean {
    return this.bytes === 0;
  }

  add(piece: Buffer): void {
    const room = KEPT_BYTES + MAX_LINE_BYTES - this.bytes;
    // Past the limit, only the first KEPT_BYTES matter: nothing more is held.
    if (this.bytes <= MAX_LINE_BYTES) this.pieces.push(Buffer.from(piece.subarray(0, Math.max(0, room))));
    this.bytes += piece.length;
  }

  finish(last: Buffer, number: number): InputLine {
    const total = this.bytes + last.length;
    if (total > MAX_LINE_BYTES) {
      const start = Buffer.concat([...this.pieces, last.subarray(0, KEPT_BYTES)]).subarray(0, KEPT_BYTES);
      this.reset();
      return {
        number,
        text: start.toString("utf8"),
        problem: `the line is ${total} bytes long, more than the ${MAX_LINE_BYTES / 1024 / 1024} MiB a line may have (a message is at most 32 KB); only its first ${KEPT_BYTES} bytes are kept`,
      };
    }
    const line = decode(Buffer.concat([...this.pieces, last]), number);
    this.reset();
    return line;
  }

  private reset(): void {
    this.pieces = [];
    this.bytes = 0;
  }
}

function decode(bytes: Buffer, number: number): InputLine {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0d) end -= 1;
  const body = end === bytes.length ? bytes : bytes.subarray(0, end);
  const text = decodeUtf8(body);
  if (text === undefined)
    return { number, text: body.toString("utf8"), problem: `${NOT_UTF8}; the dead-letter record shows the bytes it could not read as U+FFFD` };
  return { number, text: number === 1 && text.startsWith("\uFEFF") ? text.slice(1) : text };
}
