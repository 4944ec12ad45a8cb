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
}

/** The global flags, as commander parses them. */
export interface GlobalFlags {
  json?: boolean;
  quiet?: boolean;
  color?: boolean;
}
