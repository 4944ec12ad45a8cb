import { readFile, rm, truncate } from "node:fs/promises";
import { UsageError } from "../core/errors.js";
import { AppendFile } from "./append-file.js";

const MAGIC = "wh-replay-journal";

/** A growable set of line numbers, one bit each: a million lines cost 125 KB. */
class LineSet {
  private bits = new Uint8Array(1024);
  size = 0;

  add(line: number): void {
    const byte = line >>> 3;
    if (byte >= this.bits.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.bits.length * 2));
      grown.set(this.bits);
      this.bits = grown;
    }
    const mask = 1 << (line & 7);
    if (((this.bits[byte] as number) & mask) === 0) this.size += 1;
    this.bits[byte] = (this.bits[byte] as number) | mask;
  }

  has(line: number): boolean {
    const byte = line >>> 3;
    return byte < this.bits.length && ((this.bits[byte] as number) & (1 << (line & 7))) !== 0;
  }
}

/**
 * Which input lines are finished (delivered, skipped, invalid or failed and dead-lettered).
 * Line numbers are appended as they finish and flushed within the same turn of the event loop,
 * so after `kill -9` only the deliveries that were in flight are sent again on `--resume`.
 */
export class Journal {
  private constructor(
    private readonly file: AppendFile,
    private readonly finished: LineSet,
  ) {}

  /**
   * Opens the journal for `input` (an absolute path, or "-" for stdin). With `resume`, the lines
   * it records as finished are loaded; without, it starts afresh.
   */
  static async open(path: string, input: string, resume: boolean): Promise<{ journal: Journal; resumed: number | undefined }> {
    const finished = new LineSet();
    let existing = false;
    if (resume) existing = await load(path, input, finished);
    const file = new AppendFile(path, existing ? "a" : "w");
    if (!existing) {
      file.append(`${JSON.stringify({ [MAGIC]: 1, input })}\n`);
      file.flush();
    }
    return { journal: new Journal(file, finished), resumed: existing ? finished.size : undefined };
  }

  get path(): string {
    return this.file.path;
  }

  isFinished(line: number): boolean {
    return this.finished.has(line);
  }

  markFinished(line: number): void {
    this.file.append(`${line}\n`);
  }

  flush(): void {
    this.file.flush();
  }

  /** Closes the journal; a journal whose input was finished completely is removed. */
  async close(complete: boolean): Promise<void> {
    this.file.close();
    if (complete) await rm(this.file.path, { force: true });
  }
}

async function load(path: string, input: string, finished: LineSet): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  const lines = text.split("\n");
  if (parseHeader(lines[0] ?? "") !== input) {
    throw new UsageError(`--resume: the journal ${path} belongs to another input`, { hint: "run without --resume to start from the top, or pass --journal FILE" });
  }
  // Every record ends with a newline: text after the last one was cut short by kill -9. Drop
  // it from the file too, so that what is appended next starts on a line of its own.
  const torn = lines.pop() ?? "";
  if (torn !== "") await truncate(path, Buffer.byteLength(text) - Buffer.byteLength(torn));
  for (const line of lines.slice(1)) if (/^\d+$/.test(line)) finished.add(Number(line));
  return true;
}

function parseHeader(text: string): string | undefined {
  try {
    const header = JSON.parse(text) as Record<string, unknown>;
    if (header[MAGIC] === 1 && typeof header.input === "string") return header.input;
  } catch {
    // not a journal
  }
  throw new UsageError(`--resume: the journal is not a wh replay journal (its first line is ${JSON.stringify(text.slice(0, 60))})`);
}
