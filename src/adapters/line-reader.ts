import type { Readable } from "node:stream";

export interface InputLine {
  /** 1-based line number in the input. */
  number: number;
  /** The line without its line ending (and without a leading BOM on line 1). */
  text: string;
}

const NEWLINE = 0x0a;

/**
 * Streams lines from bytes without holding more than one chunk and one partial line, a chunk's
 * lines at a time (one await per chunk, not per line, on the hot path of replay). Splitting on
 * the newline byte before decoding keeps multi-byte characters whole across chunks.
 */
export async function* readLineBatches(stream: Readable): AsyncGenerator<InputLine[]> {
  let carry: Buffer | undefined;
  let number = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const batch: InputLine[] = [];
      let start = 0;
      let end = chunk.indexOf(NEWLINE, start);
      while (end !== -1) {
        const piece = carry === undefined ? chunk.subarray(start, end) : Buffer.concat([carry, chunk.subarray(start, end)]);
        carry = undefined;
        number += 1;
        batch.push({ number, text: decode(piece, number) });
        start = end + 1;
        end = chunk.indexOf(NEWLINE, start);
      }
      if (start < chunk.length) {
        const rest = chunk.subarray(start);
        carry = carry === undefined ? Buffer.from(rest) : Buffer.concat([carry, rest]);
      }
      if (batch.length > 0) yield batch;
    }
  } catch (error) {
    // The reader destroyed the stream on purpose (Ctrl-C): that is the end of the input.
    if (stream.destroyed && (error as NodeJS.ErrnoException).code === "ERR_STREAM_PREMATURE_CLOSE") return;
    throw error;
  }
  if (carry !== undefined && carry.length > 0) yield [{ number: number + 1, text: decode(carry, number + 1) }];
}

/** The lines of a stream one by one (see readLineBatches). */
export async function* readLines(stream: Readable): AsyncGenerator<InputLine> {
  for await (const batch of readLineBatches(stream)) yield* batch;
}

function decode(bytes: Buffer, number: number): string {
  let text = bytes.toString("utf8");
  if (text.endsWith("\r")) text = text.slice(0, -1);
  if (number === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
  return text;
}
