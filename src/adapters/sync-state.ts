import { readFile, rename, writeFile } from "node:fs/promises";
import { InputError, UsageError } from "../core/errors.js";
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
  let file: StateFile;
  try {
    file = JSON.parse(text) as StateFile;
  } catch (error) {
    throw new InputError(`--state ${path}: not a wh state file (${(error as Error).message})`, { cause: error });
  }
  if (file["wh-sync-state"] !== 1 || typeof file.values !== "object" || file.values === null) throw new InputError(`--state ${path}: not a wh state file`);
  if (file.kind !== kind || file.trait !== trait) {
    throw new UsageError(`--state ${path}: the file holds the ${file.kind} ${JSON.stringify(file.name)}, not the ${kind} ${JSON.stringify(name)}`);
  }
  return { kind, name, trait, values: new Map(Object.entries(file.values)) };
}

/** Writes the state to a temporary file and renames it over the old one: never half-written. */
export async function saveSyncState(path: string, state: SyncState): Promise<void> {
  const file: StateFile = { "wh-sync-state": 1, kind: state.kind, name: state.name, trait: state.trait, values: Object.fromEntries(state.values) };
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(file)}\n`);
  await rename(temporary, path);
}
