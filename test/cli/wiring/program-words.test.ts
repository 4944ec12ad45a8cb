import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closest } from "../../../src/cli/wiring/suggest.js";
import { runInProcess } from "../../helpers/in-process.js";
import { lines, removeTempDirs, ROOT } from "../../helpers/run-wh.js";

// What wh says about itself: its exit codes, a missing or mistyped command. In-process.

afterAll(removeTempDirs);

describe("wh's words about itself", () => {
  it("lists every exit code it can end with in wh --help", async () => {
    const { stdout } = await runInProcess(["--help"]);
    const codes = stdout.split("Exit codes:")[1] ?? "";
    for (const code of [0, 1, 2, 70, 74, 130, 141]) expect(codes).toMatch(new RegExp(`(^|[\\s;])${code} `));
  });

  it("says Retry-After is waited when longer than the backoff, never less, as docs/destination.md does", async () => {
    const { stdout } = await runInProcess(["replay", "--help"]);
    const help = stdout.replace(/\s+/g, " ");
    expect(help).toContain("or longer when Retry-After (seconds or an HTTP date) asks for longer, never less");
    expect(readFileSync(join(ROOT, "docs", "destination.md"), "utf8")).toMatch(
      /`Retry-After` \(seconds or HTTP date\) is waited, but never less than the backoff/,
    );
  });

  it("answers wh --json without a command with a JSON error naming the problem, not commander's internals", async () => {
    const result = await runInProcess(["--json"]);
    expect(result.code).toBe(2);
    expect(lines(result.stdout)).toHaveLength(1);
    expect(JSON.parse(result.stdout)).toEqual({ error: { code: "E_USAGE", message: "no command given: wh --help lists them", exitCode: 2 } });
    expect(result.stdout).not.toContain("outputHelp");
    expect(result.stderr).toContain("Commands:");
  });

  it("suggests the subcommand meant for wh serve dead-leters, and lists them for a word near none", async () => {
    const typo = await runInProcess(["serve", "dead-leters", "list"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(`unknown command "dead-leters" for 'wh serve' (did you mean dead-letters?)`);
    const far = await runInProcess(["--json", "serve", "frobnicate"]);
    expect(far.code).toBe(2);
    expect(JSON.parse(far.stdout)).toMatchObject({
      error: { code: "E_USAGE", message: `unknown command "frobnicate" for 'wh serve'`, hint: "its commands: dead-letters (wh serve --help)" },
    });
  });
});

describe("closest", () => {
  it("finds the nearest word within a third of its length, a swap of neighbours counting one", () => {
    expect(closest("dead-leters", ["dead-letters"])).toBe("dead-letters");
    expect(closest("lsit", ["list", "replay"])).toBe("list");
    expect(closest("replya", ["list", "replay"])).toBe("replay");
    expect(closest("sned", ["send", "sign"])).toBe("send");
    expect(closest("upload", ["list", "replay"])).toBeUndefined();
    expect(closest("x", [])).toBeUndefined();
  });
});
