/**
 * Errors thrown when `wh` cannot go on. Expected outcomes (a failed delivery, a signature
 * mismatch, an invalid line in a file) are values, not exceptions.
 */
export type ExitCode = 0 | 1 | 2 | 70 | 74 | 130 | 141;

export interface WhErrorOptions {
  hint?: string | undefined;
  cause?: unknown;
}

export class WhError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;

  constructor(code: string, message: string, exitCode: ExitCode, options: WhErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = exitCode;
    this.hint = options.hint;
  }
}

/** Bad flags or arguments, or a library call given what it cannot take: exit 2. */
export class UsageError extends WhError {
  /** `code` is E_USAGE but for a subclass with codes of its own (the Analytics client's). */
  constructor(message: string, options: WhErrorOptions = {}, code = "E_USAGE") {
    super(code, message, 2, options);
  }
}

/** An invalid configuration: one `path: problem` line per issue, exit 2. */
export class ConfigError extends WhError {
  readonly issues: readonly string[];

  constructor(issues: readonly string[], options: WhErrorOptions & { source?: string } = {}) {
    const where = options.source === undefined ? "invalid configuration" : `invalid configuration in ${options.source}`;
    super("E_CONFIG", `${where}:\n${issues.map((issue) => `  ${issue}`).join("\n")}`, 2, options);
    this.issues = issues;
  }
}

/** Input that cannot be read or used (a missing file, a message that fails validation): exit 2. */
export class InputError extends WhError {
  constructor(message: string, options: WhErrorOptions = {}) {
    super("E_INPUT", message, 2, options);
  }
}

/**
 * A file wh writes (journal, dead letters, state, capture) failed mid-run: a full disk, an I/O
 * error. The run stopped without marking anything finished that was not recorded whole: exit 74
 * (EX_IOERR), resumable.
 */
export class OutputWriteError extends WhError {
  constructor(message: string, options: WhErrorOptions = {}) {
    super("E_WRITE", message, 74, options);
  }
}
