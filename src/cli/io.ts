import type { Readable, Writable } from "node:stream";

/** What a command may touch of the process: passed in, so commands never reach for globals. */
export interface CliIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** `fd` when it has a descriptor (process.stdin: 0), to tell the file it is redirected from. */
  stdin: Readable & { isTTY?: boolean; fd?: number };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborts on the first Ctrl-C (SIGINT) or SIGTERM. */
  signal: AbortSignal;
  /** The waits a command makes; absent, the defaults users get. Tests shorten them. */
  timings?: Partial<CliTimings> | undefined;
}

export interface CliTimings {
  /** After the first Ctrl-C, how long deliveries in flight may finish (default 5 s). */
  graceMs: number;
  /** How often a run off a terminal logs its progress (default 5 s). */
  progressEveryMs: number;
}

/** The global flags, as commander parses them. */
export interface GlobalFlags {
  json?: boolean;
  quiet?: boolean;
  color?: boolean;
}
