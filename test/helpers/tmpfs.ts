import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A small tmpfs, to fill a disk for real. Mounting needs root (or CAP_SYS_ADMIN): where it is
 * refused, `mountTmpfs` returns the reason, and the caller skips with one visible line, unless
 * WH_REQUIRE_SERVICES=1 (CI), where it throws.
 */
export interface Tmpfs {
  dir: string;
  unmount(): void;
}

export function mountTmpfs(sizeBytes: number): Tmpfs | string {
  const dir = mkdtempSync(join(tmpdir(), "wh-tmpfs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const reason = `a tmpfs cannot be mounted here (${String((error as { stderr?: unknown }).stderr ?? (error as Error).message).trim()})`;
    if (process.env.WH_REQUIRE_SERVICES === "1") throw new Error(`WH_REQUIRE_SERVICES=1 but ${reason}`);
    console.warn(`skipped: the full-disk tests: ${reason}`);
    return reason;
  }
  return {
    dir,
    unmount() {
      execFileSync("umount", ["-l", dir], { stdio: "pipe" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
