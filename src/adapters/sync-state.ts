import { readFile } from "node:fs/promises";
import { InputError, OutputWriteError, UsageError } from "../core/errors.js";
import { isJsonObject, parseJsonOrThrow } from "../core/message/parse-json.js";
import { acquireLock } from "./lock-file.js";
import { describeOutputError } from "./output-file.js";
import { openReplacedFile, type ReplacedFile } from "./replaced-file.js";
import { describeFsError } from "./read-input.js";

export type SyncKind = "audience" | "trait";

/**
 * What the destination was last told, per user: audience members (value true) or computed-trait
 * values. Read at the start of a sync; written (atomically) with only what was delivered.
 */
export interface SyncState {
  kind: SyncKind;
  name: string;
  trait: string;
  values: Map<string, unknown>;
}

interface StateFile {
  "wh-sync-state": 1;
  kind: SyncKind;
  name: string;
  trait: string;
  values: Record<string, unknown>;
}

/** Loads the state of a sync; a missing file is a first sync. */
export async function loadSyncState(path: string, kind: SyncKind, name: string, trait: string): Promise<SyncState> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind, name, trait, values: new Map() };
    throw new InputError(`--state ${path}: ${describeFsError(error)}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = parseJsonOrThrow(text);
  } catch (error) {
    throw new InputError(`--state ${path}: not a wh state file (${(error as Error).message})`, { cause: error });
  }
  const problem = stateFileProblem(parsed);
  if (problem !== undefined)
    throw new InputError(`--state ${path}: ${problem}`, {
      hint: "nothing was sent; move the file aside to start again with a first sync (which sends every member or value)",
    });
  const file = parsed as StateFile;
  if (file.kind !== kind || file.trait !== trait) {
    throw new UsageError(`--state ${path}: the file holds the ${file.kind} ${JSON.stringify(file.name)}, not the ${kind} ${JSON.stringify(name)}`);
  }
  return { kind, name, trait, values: new Map(Object.entries(file.values)) };
}

/**
 * Why a parsed file is not a state wh wrote, or undefined. Read as it is, a corrupt one would
 * send the wrong changes: `values` as an array has users "0" and "1".
 */
function stateFileProblem(file: unknown): string | undefined {
  if (!isJsonObject(file) || file["wh-sync-state"] !== 1) return "not a wh state file";
  if (file.kind !== "audience" && file.kind !== "trait")
    return `a corrupt state file: kind is ${file.kind === undefined ? "missing" : JSON.stringify(file.kind)}, not "audience" or "trait"`;
  if (typeof file.name !== "string" || typeof file.trait !== "string") return "a corrupt state file: name and trait must be strings";
  if (Array.isArray(file.values)) return "a corrupt state file: values is an array, not an object of userId: value";
  if (!isJsonObject(file.values)) return "a corrupt state file: values is missing or not an object of userId: value";
  if (file.kind === "audience") {
    const member = Object.entries(file.values).find(([, value]) => value !== true);
    if (member !== undefined) {
      const shown = JSON.stringify(member[1]);
      return `a corrupt state file: values[${JSON.stringify(member[0])}] is ${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}: an audience's state holds true for each member`;
    }
  }
  return undefined;
}

export interface SyncStateWriter {
  /** Writes the state aside, syncs it and renames it over the state file: never half-written. */
  save(state: SyncState): void;
  /** Lets the next sync take the state file. */
  close(): void;
}

/**
 * Takes the state file for this sync (a lock beside it: two syncs of one state at once would each
 * send the same changes) and checks, before anything is sent, that it can be written: the file
 * it will be renamed from is created now, in the same directory, without following links.
 */
export function openSyncStateWriter(path: string): SyncStateWriter {
  const lock = acquireLock(`${path}.lock`, `the state file ${path}`);
  let file: ReplacedFile;
  try {
    file = openReplacedFile(path, "--state");
  } catch (error) {
    lock.release();
    throw error;
  }
  return {
    save(state) {
      const saved: StateFile = { "wh-sync-state": 1, kind: state.kind, name: state.name, trait: state.trait, values: Object.fromEntries(state.values) };
      try {
        file.replace(`${JSON.stringify(saved)}\n`);
      } catch (error) {
        throw new OutputWriteError(`could not save the state ${path}: ${describeOutputError(error, path)}`, {
          cause: error,
          hint: "what was delivered since the last saved state is sent again by the next sync",
        });
      }
    },
    close() {
      file.discard();
      lock.release();
    },
  };
}
