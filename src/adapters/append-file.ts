import { closeSync, openSync, writeSync } from "node:fs";

/**
 * An append-only text file written in batches: `append` buffers, `flush` writes the buffer with
 * one system call. Written data survives `kill -9` (it is in the kernel), which is all a journal
 * needs; the file is opened on the first flush that has something to write.
 */
export class AppendFile {
  private fd: number | undefined;
  private buffer: string[] = [];
  private written = 0;

  /** @param mode "a" appends to what the file holds, "w" starts it afresh. */
  constructor(
    readonly path: string,
    private readonly mode: "a" | "w",
  ) {}

  append(text: string): void {
    this.buffer.push(text);
  }

  /** How many records have been appended, flushed or not. */
  get count(): number {
    return this.written + this.buffer.length;
  }

  flush(): void {
    if (this.buffer.length === 0) return;
    this.fd ??= openSync(this.path, this.mode);
    writeSync(this.fd, this.buffer.join(""));
    this.written += this.buffer.length;
    this.buffer = [];
  }

  close(): void {
    this.flush();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
