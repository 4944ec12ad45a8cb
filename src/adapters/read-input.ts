import { createReadStream, readFile as readFileCallback, stat as statCallback } from "node:fs";
import { resolve } from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { InputError, UsageError } from "../core/errors.js";
import { decodeUtf8, NOT_UTF8 } from "./utf8.js";

// node:fs's callbacks rather than node:fs/promises, which `wh sign` and `wh verify` would load for
// one read: about 1 ms of their start-up (bench/cold-start.js). Their secret file is read with it too.
export const readFile = promisify(readFileCallback);
const stat = promisify(statCallback);

/**
 * Where input comes from: standard input, or a file relative to `cwd`. A getter is read only when
 * the input is standard input: setting up process.stdin costs a command that reads a file part of
 * its start-up.
 */
export interface StdinSource {
  readonly stdin: Readable & { isTTY?: boolean };
  readonly cwd: string;
}

/** Reads a whole file, or standard input for `-` or no file, as raw bytes. */
export async function readInput(file: string | undefined, from: StdinSource, what: string): Promise<Buffer> {
  if (file === undefined || file === "-") {
    const { stdin } = from;
    if (stdin.isTTY === true) throw new UsageError(`no ${what}: give a FILE, or pipe it on standard input`);
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(resolve(from.cwd, file));
  } catch (error) {
    throw new InputError(`${file}: ${describeFsError(error)}`, { cause: error });
  }
}

/** readInput for text (`--data @file`): bytes that are not UTF-8 are refused, naming `flag` and where they came from. */
export async function readTextInput(file: string, from: StdinSource, flag: string): Promise<string> {
  const text = decodeUtf8(await readInput(file, from, flag));
  if (text === undefined) throw new InputError(`${flag}: ${file === "-" ? "standard input" : file} is ${NOT_UTF8}`);
  return text;
}

/** A file-system error in a person's words, from its code. */
export function describeFsError(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case "ENOENT":
      return "no such file";
    case "EISDIR":
      return "is a directory";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    default:
      return (error as Error).message;
  }
}

/**
 * Opens an NDJSON input for streaming: a file (checked first, so a missing file is an input
 * error and not a stream error later), or standard input for `-` when something is piped in.
 */
export async function openInputStream(file: string, cwd: string, from: StdinSource): Promise<Readable> {
  if (file === "-") {
    const { stdin } = from;
    if (stdin.isTTY === true) throw new UsageError("no input: give an NDJSON file, or pipe it on standard input with -");
    return stdin;
  }
  const path = resolve(cwd, file);
  try {
    if ((await stat(path)).isDirectory()) throw new InputError(`${file}: is a directory`);
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`${file}: ${describeFsError(error)}`, { cause: error });
  }
  return createReadStream(path, { highWaterMark: 64 * 1024 });
}
