import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { builtBin, cleanEnv, lines, makeTempDir, removeTempDirs, ROOT, run, STACK_TRACE } from "../../helpers/run-wh.js";
import { staleBuild } from "../../../scripts/stale-build.mjs";

// The bundle's smoke test: bin/wh.cjs (dist/) spawned for every command's --help; the rest in-process.

const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };

/** The commands a help text lists under "Commands:", without commander's own `help`. */
function listedCommands(help: string): string[] {
  const section = help.split("Commands:\n")[1]?.split("\n\n")[0] ?? "";
  return section
    .split("\n")
    .map((line) => /^ {2}(\S+)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== "help");
}

/** What a help text says of each command it lists (a wrapped summary joined again). */
function commandSummaries(help: string): string[] {
  const section = help.split("Commands:\n")[1]?.split("\n\n")[0] ?? "";
  const summaries: string[] = [];
  for (const line of section.split("\n")) {
    const row = /^ {2}\S.*? {2,}(\S.*)$/.exec(line);
    if (row !== null) summaries.push(row[1] ?? "");
    else if (summaries.length > 0) summaries.push(`${summaries.pop()} ${line.trim()}`);
  }
  return summaries;
}

/** Every command a person can run, as argv prefixes, found by walking `wh --help` (so a new command is covered at once). */
function discoverCommands(prefix: string[] = []): string[][] {
  const help = execFileSync(process.execPath, [builtBin(), ...prefix, "--help"], { env: cleanEnv(), encoding: "utf8" });
  return listedCommands(help).flatMap((name) => [[...prefix, name], ...discoverCommands([...prefix, name])]);
}

const COMMANDS = discoverCommands();

afterAll(removeTempDirs);

describe.concurrent("wh --help and --version", () => {
  it("prints the package.json version for --version and -V", async () => {
    for (const flag of ["--version", "-v", "-V"]) {
      const result = await runInProcess([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });

  it("exits 0 and shows Examples and the exit codes for wh --help", async () => {
    const result = await runInProcess(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Examples:");
    expect(result.stdout).toMatch(/Exit codes:/);
  });

  it("finds every command in the help, groups and their subcommands included", () => {
    const names = COMMANDS.map((argv) => argv.join(" "));
    for (const name of ["send", "sign", "verify", "listen", "config", "config show", "config validate", "demo"]) expect(names).toContain(name);
  });

  it.each(COMMANDS.map((argv) => [argv.join(" "), argv]))("exits 0 and shows an Examples: section for wh %s --help", async (_name, argv) => {
    const result = await run([...argv, "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: wh /);
    expect(result.stdout).toContain("Examples:");
    expect(result.stdout).toMatch(/Examples:\n {2}\$ .*\bwh\b/);
  });

  it("lists every command, at every level, in one style: a lowercase phrase without a full stop, as commander's own lines", async () => {
    const shown: string[] = [];
    for (const prefix of [[], ...COMMANDS]) {
      const result = await runInProcess([...prefix, "--help"]);
      shown.push(...commandSummaries(result.stdout));
    }
    // Each command once, under its parent, and commander's own `help` lines.
    expect(shown.length).toBeGreaterThan(COMMANDS.length);
    for (const summary of shown) {
      expect(summary, summary).toMatch(/^[a-z]/);
      expect(summary, summary).not.toMatch(/\.$/);
      expect(summary.length, summary).toBeLessThanOrEqual(72);
    }
  });

  it("shows the retry schedule in wh send --help", async () => {
    const result = await runInProcess(["send", "--help"]);
    expect(result.stdout).toMatch(/jitter/);
    expect(result.stdout).toMatch(/Retry-After/);
  });

  it("says what the duplicate window costs in memory in wh serve --help", async () => {
    const result = await runInProcess(["serve", "--help"]);
    expect(result.stdout.replace(/\s+/g, " ")).toContain(
      "messageId is among the last N accepted for its source; memory: 16-32 bytes per id per source (100000: 2-3 MB)",
    );
  });

  it("exits 2 on an unknown command", async () => {
    const result = await runInProcess(["sned"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("sned");
  });

  it("exits 2 on an unknown global flag", async () => {
    const result = await runInProcess(["--frobnicate", "demo"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--frobnicate");
  });
});

describe("wh demo", () => {
  it("exits 0 and reports 7 of 7 events delivered and verified", async () => {
    const result = await runInProcess(["demo"]);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\b7 (of 7 (events )?)?delivered/);
    expect(result.stdout).toMatch(/\b7 (of 7 )?signatures verified/);
    expect(lines(result.stdout).filter((line) => line.includes("signature verified"))).toHaveLength(7);
  });

  it("prints only JSON lines on stdout with --json, 7 of them verified", async () => {
    const result = await runInProcess(["demo", "--json"]);
    expect(result.code).toBe(0);
    const records = lines(result.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((record) => record.signature === "valid")).toHaveLength(7);
    expect(records.some((record) => record.verified === 7)).toBe(true);
    expect(records.some((record) => record.outcome === "failed")).toBe(false);
  });
});

describe("the guard on the built CLI", () => {
  it("refuses a bundle that is missing or older than a source file, and accepts one built after them", async () => {
    const dir = await makeTempDir();
    const src = join(dir, "src");
    const bundle = join(dir, "main.cjs");
    await mkdir(join(src, "cli"), { recursive: true });
    await writeFile(join(src, "cli", "a.ts"), "");
    expect(staleBuild(bundle, [src])).toBe("dist/ is not built");
    await writeFile(bundle, "");
    const past = new Date(Date.now() - 60_000);
    await utimes(bundle, past, past);
    expect(staleBuild(bundle, [src])).toBe("dist/ is older than the source");
    const future = new Date(Date.now() + 60_000);
    await utimes(bundle, future, future);
    expect(staleBuild(bundle, [src])).toBeUndefined();
    // A file among the sources (package.json) counts as a directory's files do; a missing one does not.
    const manifest = join(dir, "package.json");
    const later = new Date(Date.now() + 120_000);
    await utimes(manifest, later, later);
    expect(staleBuild(bundle, [src, manifest, join(dir, "absent.json")])).toBe("dist/ is older than the source");
  });
});
