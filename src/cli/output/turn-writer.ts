import { Writable } from "node:stream";

/**
 * Standard output for a long run (`wh serve`, `wh replay --json`): the lines written in one turn
 * of the event loop reach the file or pipe together, in one write at the end of the turn, instead
 * of one blocking write(2) each (Node writes a pipe or a file synchronously). `flushNow()` writes
 * what is held at once, before a forced exit, so no line is lost.
 */
export class TurnWriter extends Writable {
  readonly isTTY: boolean | undefined;
  private held: (string | Buffer)[] = [];
  private scheduled = false;

  constructor(private readonly target: NodeJS.WritableStream & { isTTY?: boolean; writableNeedDrain?: boolean }) {
    super({ decodeStrings: false });
    this.isTTY = target.isTTY;
  }

  override _write(chunk: string | Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.held.push(chunk);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flushNow());
    }
    // Stdout a slow reader drains (a pipe): its backpressure is this stream's, so that a writer
    // that waits for "drain" here holds no more than the pipe's buffer.
    if (this.target.writableNeedDrain === true) this.target.once("drain", () => done());
    else done();
  }

  override _final(done: (error?: Error | null) => void): void {
    this.flushNow();
    done();
  }

  /** Writes at once what it holds. */
  flushNow(): void {
    this.scheduled = false;
    if (this.held.length === 0) return;
    const chunks = this.held;
    this.held = [];
    this.target.write(
      chunks.every((chunk) => typeof chunk === "string")
        ? chunks.join("")
        : Buffer.concat(chunks.map((chunk) => (typeof chunk === "string" ? Buffer.from(chunk) : chunk))),
    );
  }
}
