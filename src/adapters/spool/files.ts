import { closeSync, fstatSync, ftruncateSync, readFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { openOutputFile } from "../output-file.js";

/** Bytes a scan or a reader takes from a segment at once; a longer record is read whole all the same. */
export const CHUNK_BYTES = 1 << 20;

/**
 * Reads a segment file a chunk at a time, calling `onLine` with each whole record's text and
 * index. A line without its newline was never synced whole, so never answered 200: it is cut off.
 */
export async function scanSegment(path: string, onLine: (line: string, index: number) => void): Promise<{ records: number; bytes: number }> {
  const file = await open(path, "r");
  let records = 0;
  let bytes = 0;
  let size = 0;
  try {
    size = (await file.stat()).size;
    let buffer = Buffer.alloc(CHUNK_BYTES);
    let carried = 0;
    for (let position = 0; position < size; ) {
      if (carried === buffer.length) buffer = Buffer.concat([buffer, Buffer.alloc(buffer.length)]);
      const { bytesRead } = await file.read(buffer, carried, buffer.length - carried, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const filled = carried + bytesRead;
      let lineStart = 0;
      for (let newline = buffer.indexOf(10, 0); newline !== -1 && newline < filled; newline = buffer.indexOf(10, lineStart)) {
        onLine(buffer.toString("utf8", lineStart, newline), records);
        records += 1;
        bytes += newline + 1 - lineStart;
        lineStart = newline + 1;
      }
      carried = filled - lineStart;
      buffer.copy(buffer, 0, lineStart, filled);
    }
  } finally {
    await file.close();
  }
  if (bytes < size) truncateFile(path, bytes);
  return { records, bytes };
}

/** The indexes in an ack file's whole lines; a partial last one (a write cut short by a full disk) is cut off. */
export function readAcks(path: string): Set<number> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Set();
    throw error;
  }
  const whole = text.slice(0, text.lastIndexOf("\n") + 1);
  if (whole.length !== text.length) truncateFile(path, Buffer.byteLength(whole));
  const acked = new Set<number>();
  for (const line of whole.split("\n")) if (/^\d+$/.test(line)) acked.add(Number(line));
  return acked;
}

function truncateFile(path: string, length: number): void {
  const fd = openOutputFile(path, "the spool file", "append");
  try {
    if (fstatSync(fd).size > length) ftruncateSync(fd, length);
  } finally {
    closeSync(fd);
  }
}
