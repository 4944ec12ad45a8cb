import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadSyncState, openSyncStateWriter, type SyncState } from "../../src/adapters/sync-state.js";

/** One save, the way a sync makes it: take the file, write, let go. */
async function saveSyncState(path: string, state: SyncState): Promise<void> {
  const writer = openSyncStateWriter(path);
  try {
    writer.save(state);
  } finally {
    writer.close();
  }
}
import { InputError, UsageError, WhError } from "../../src/core/errors.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-sync-state-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function audienceState(values: [string, unknown][]): SyncState {
  return { kind: "audience", name: "High-Value Users (EU)", trait: "high_value_users_eu", values: new Map(values) };
}

async function errorOf(promise: Promise<unknown>): Promise<WhError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof WhError) return error;
    throw error;
  }
  throw new Error("expected a WhError");
}

describe("loadSyncState", () => {
  it("loads a missing file as an empty first sync", async () => {
    const state = await loadSyncState(join(dir, "none.json"), "audience", "High-Value Users (EU)", "high_value_users_eu");
    expect(state).toEqual({ kind: "audience", name: "High-Value Users (EU)", trait: "high_value_users_eu", values: new Map() });
  });

  it("refuses the state file of another audience with a UsageError (exit 2)", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(path, audienceState([["u1", true]]));
    const error = await errorOf(loadSyncState(path, "audience", "Churn Risk", "churn_risk"));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(path);
    expect(error.message).toContain("High-Value Users (EU)");
  });

  it("refuses the state file of a computed trait for an audience of the same name", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(path, { kind: "trait", name: "Lifetime Value", trait: "lifetime_value", values: new Map([["u1", 10]]) });
    const error = await errorOf(loadSyncState(path, "audience", "Lifetime Value", "lifetime_value"));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.exitCode).toBe(2);
  });

  it("refuses a corrupt state file with an InputError naming the file", async () => {
    const path = join(dir, "corrupt.json");
    await writeFile(path, '{"wh-sync-state":1,"kind":"audience","values":{"u1":tr');
    const error = await errorOf(loadSyncState(path, "audience", "High-Value Users (EU)", "high_value_users_eu"));
    expect(error).toBeInstanceOf(InputError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(path);
  });

  it("refuses a JSON file that is not a wh state file with an InputError naming the file", async () => {
    const path = join(dir, "other.json");
    await writeFile(path, '{"hello":"world"}\n');
    const error = await errorOf(loadSyncState(path, "audience", "High-Value Users (EU)", "high_value_users_eu"));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toContain(path);
  });

  it("refuses a directory given as the state file with an InputError naming it", async () => {
    const error = await errorOf(loadSyncState(dir, "audience", "High-Value Users (EU)", "high_value_users_eu"));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toContain(dir);
  });
});

describe("saveSyncState", () => {
  it("round-trips through loadSyncState", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(path, {
      kind: "trait",
      name: "Lifetime Value",
      trait: "lifetime_value",
      values: new Map<string, unknown>([
        ["u1", 100],
        ["u2", "gold"],
        ["u3", { tier: 2 }],
        ["u4", null],
        ["u5", false],
      ]),
    });
    const loaded = await loadSyncState(path, "trait", "Lifetime Value", "lifetime_value");
    expect(loaded.values).toEqual(
      new Map<string, unknown>([
        ["u1", 100],
        ["u2", "gold"],
        ["u3", { tier: 2 }],
        ["u4", null],
        ["u5", false],
      ]),
    );
    expect(loaded.kind).toBe("trait");
    expect(loaded.trait).toBe("lifetime_value");
  });

  it("replaces the previous state instead of merging with it", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(
      path,
      audienceState([
        ["u1", true],
        ["u2", true],
      ]),
    );
    await saveSyncState(path, audienceState([["u3", true]]));
    const loaded = await loadSyncState(path, "audience", "High-Value Users (EU)", "high_value_users_eu");
    expect([...loaded.values.keys()]).toEqual(["u3"]);
  });

  it("writes a JSON file and leaves no temporary file beside it", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(path, audienceState([["u1", true]]));
    await saveSyncState(
      path,
      audienceState([
        ["u1", true],
        ["u2", true],
      ]),
    );
    expect(await readdir(dir)).toEqual(["state.json"]);
    const parsed = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
    expect(parsed.values).toEqual({ u1: true, u2: true });
  });

  it("replaces the file by renaming a new one over it, not by rewriting it in place", async () => {
    const path = join(dir, "state.json");
    await saveSyncState(path, audienceState([["u1", true]]));
    const before = await stat(path);
    await saveSyncState(path, audienceState([["u2", true]]));
    const after = await stat(path);
    expect(after.ino).not.toBe(before.ino);
  });

  it("never lets a reader see a half-written file while saves go on", async () => {
    const path = join(dir, "state.json");
    const big = (prefix: string): SyncState =>
      audienceState(Array.from({ length: 20_000 }, (_, index): [string, unknown] => [`${prefix}-user-${index}`, true]));
    const states = [big("a"), big("b")];
    await saveSyncState(path, states[0] as SyncState);
    let saving = true;
    const writer = (async () => {
      for (let round = 0; round < 20; round += 1) await saveSyncState(path, states[round % 2] as SyncState);
      saving = false;
    })();
    let reads = 0;
    while (saving) {
      const text = await readFile(path, "utf8");
      const parsed = JSON.parse(text) as { values: Record<string, unknown> };
      expect(Object.keys(parsed.values)).toHaveLength(20_000);
      reads += 1;
    }
    await writer;
    expect(reads).toBeGreaterThan(0);
  });
});
