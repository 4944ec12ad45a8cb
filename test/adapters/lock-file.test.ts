import { spawnSync } from "node:child_process";
import { existsSync, linkSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { acquireLock } from "../../src/adapters/lock-file.js";
import { makeTempDir, removeTempDirs } from "../helpers/run-wh.js";

afterAll(removeTempDirs);
afterEach(() => {
  vi.useRealTimers();
});

/** A lock left by a process that is gone, and the claim on it a contender made before it died too. */
async function staleLockWithAbandonedClaim(): Promise<{ path: string; claim: string }> {
  const dir = await makeTempDir();
  const path = join(dir, "events.ndjson.wh-journal.lock");
  const gone = Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout);
  writeFileSync(path, JSON.stringify({ pid: gone, host: hostname(), startedAt: "2026-11-22T00:00:00.000Z", token: "gone" }));
  const claim = `${path}.stale-gone`;
  linkSync(path, claim);
  return { path, claim };
}

describe("a stale lock whose claim was abandoned (its claimant died between claiming and removing)", () => {
  it("is not taken while the claim is fresh: another contender may be removing the lock right now", async () => {
    const { path, claim } = await staleLockWithAbandonedClaim();
    expect(() => acquireLock(path, "the journal")).toThrow(/could not take the lock \(it keeps changing hands\)/);
    expect(JSON.parse(readFileSync(path, "utf8")).token).toBe("gone");
    expect(existsSync(claim)).toBe(true);
  });

  it("is taken once the claim is more than 10 s old, and the claim is gone", async () => {
    const { path, claim } = await staleLockWithAbandonedClaim();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 10_500);
    const lock = acquireLock(path, "the journal");
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(process.pid);
    expect(existsSync(claim)).toBe(false);
    lock.release();
    expect(existsSync(path)).toBe(false);
  });
});
