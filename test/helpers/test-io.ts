import { clearLine, cursorTo, moveCursor } from "node:readline";
import { PassThrough, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { type CliIo, type CliTimings, RetryNowRequests } from "../../src/cli/wiring/io.js";
import type { Clock } from "../../src/core/clock.js";
import type { RunResult, WhProcess } from "./run-wh.js";

/**
 * Short waits for tests: a stopped run's grace period and the progress cadence off a terminal.
 * A request counts as hanging after the users' 5 s (a test that wants it sooner says so).
 */
const TEST_TIMINGS: CliTimings = { graceMs: 500, progressEveryMs: 200, hangingAfterMs: 5_000 };

export interface TestIoOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to standard input, which is then closed unless keepStdinOpen. */
  input?: string | Buffer | undefined;
  keepStdinOpen?: boolean | undefined;
  /** What stdout and stderr say they are (default: not terminals, like a pipe). */
  isTTY?: boolean | undefined;
  timings?: Partial<CliTimings> | undefined;
  clock?: Clock | undefined;
  newId?: (() => string) | undefined;
}

/** An in-memory CliIo, like gh's iostreams.Test(): what a command writes is kept for the test. */
export interface TestIo {
  io: CliIo;
  stdin: PassThrough;
  output: ReturnType<typeof watchOutput>;
  /** The first Ctrl-C: aborts the io's signal. */
  interrupt(): void;
}

export function testIo(options: TestIoOptions): TestIo {
  const output = watchOutput();
  const capture = (name: "stdout" | "stderr"): Writable & { isTTY?: boolean } => {
    // A character may come in two writes of bytes.
    const decoder = new StringDecoder("utf8");
    return Object.assign(
      new Writable({
        decodeStrings: false,
        write(chunk: string | Buffer, _encoding, done) {
          output.add(name, typeof chunk === "string" ? chunk : decoder.write(chunk));
          done();
        },
      }),
      options.isTTY === true ? terminalMethods() : { isTTY: false },
    );
  };
  const stdin = new PassThrough();
  if (options.input !== undefined) stdin.write(options.input);
  if (options.keepStdinOpen !== true) stdin.end();
  const controller = new AbortController();
  return {
    io: {
      stdout: capture("stdout"),
      stderr: capture("stderr"),
      stdin: Object.assign(stdin, { isTTY: false }),
      env: options.env,
      cwd: options.cwd,
      signal: controller.signal,
      timings: { ...TEST_TIMINGS, ...options.timings },
      clock: options.clock,
      newId: options.newId,
      retryNow: new RetryNowRequests(),
    },
    stdin,
    output,
    interrupt: () => controller.abort(),
  };
}

/**
 * What a terminal's stream (tty.WriteStream) adds, as node:readline writes it: a spinner (ora)
 * moves the cursor and clears its line with these.
 */
function terminalMethods(): ThisType<Writable> & Record<string, unknown> {
  return {
    isTTY: true,
    columns: 120,
    cursorTo(this: Writable, x: number, y?: number, done?: () => void) {
      return cursorTo(this, x, y, done);
    },
    moveCursor(this: Writable, dx: number, dy: number, done?: () => void) {
      return moveCursor(this, dx, dy, done);
    },
    clearLine(this: Writable, dir: -1 | 0 | 1, done?: () => void) {
      return clearLine(this, dir, done);
    },
  };
}

/**
 * The output of a running wh, as it arrives: what WhProcess reads, `add` for each chunk, and
 * `close` when it has exited (a wait still pending then fails).
 */
export function watchOutput(): {
  reading: Omit<WhProcess, "child" | "exited">;
  add(stream: "stdout" | "stderr", chunk: string): void;
  close(code: number | null, signal: NodeJS.Signals | null): RunResult;
} {
  const text = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  let closed = false;
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  const waitFor = (read: () => string, predicate: (text: string) => boolean): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const check = (): void => {
        if (predicate(read())) {
          listeners.delete(check);
          resolve(read());
        } else if (closed) {
          listeners.delete(check);
          reject(new Error(`wh exited before the expected output.\nstdout:\n${text.stdout}\nstderr:\n${text.stderr}`));
        }
      };
      listeners.add(check);
      check();
    });
  return {
    reading: {
      stdout: () => text.stdout,
      stderr: () => text.stderr,
      waitForStdout: (predicate) => waitFor(() => text.stdout, predicate),
      waitForStderr: (predicate) => waitFor(() => text.stderr, predicate),
    },
    add(stream, chunk) {
      text[stream] += chunk;
      notify();
    },
    close(code, signal) {
      closed = true;
      notify();
      return { code, signal, stdout: text.stdout, stderr: text.stderr };
    },
  };
}
