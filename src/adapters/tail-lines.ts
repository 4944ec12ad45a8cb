import { open, stat } from "node:fs/promises";

const CHUNK = 64 * 1024;

/**
 * The last `count` whole lines of a file (without their newlines), read from its end a chunk at
 * a time: a capture of millions of requests costs what its last lines weigh, not its size. A
 * last line without its newline is left out (a record being written). A file that is not there,
 * or is not a regular file (a FIFO, whose opening would wait for a writer; /dev/null), has none.
 */
export async function readLastLines(path: string, count: number): Promise<string[]> {
  const found = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (found?.isFile() !== true) return [];
  const file = await open(path, "r");
  try {
    let end = (await file.stat()).size;
    const chunks: Buffer[] = [];
    let newlines = 0;
    // One more newline than lines: the one before the first line kept.
    while (end > 0 && newlines <= count) {
      const length = Math.min(CHUNK, end);
      const chunk = Buffer.alloc(length);
      await file.read(chunk, 0, length, end - length);
      end -= length;
      chunks.unshift(chunk);
      for (const byte of chunk) if (byte === 0x0a) newlines += 1;
    }
    const lines = Buffer.concat(chunks).toString("utf8").split("\n");
    // What follows the last newline is a line being written (or nothing); before the first, a cut line unless the file's start was read.
    lines.pop();
    if (end > 0) lines.shift();
    return lines.slice(-count).filter((line) => line.trim() !== "");
  } finally {
    await file.close();
  }
}
