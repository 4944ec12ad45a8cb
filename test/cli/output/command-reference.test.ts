import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { commandReference } from "../../../src/cli/output/command-reference.js";
import { globalFlags } from "../../../src/cli/flags/tables.js";
import { COMMANDS } from "../../../src/cli/registry/index.js";

// docs/commands.md is generated (npm run docs): this makes it again from src and compares.

const committed = readFileSync(new URL("../../../docs/commands.md", import.meta.url), "utf8");

describe("docs/commands.md", () => {
  it("is what the registry and the flag tables give", () => {
    if (committed !== commandReference()) throw new Error("docs/commands.md is stale: run npm run docs");
  });

  it("has a section for every command, with each of its flags, arguments and defaults", () => {
    const reference = commandReference();
    for (const spec of COMMANDS) {
      const section = reference.split(`\n## wh ${spec.path.join(" ")}\n`)[1]?.split("\n## ")[0] ?? "";
      expect(section, spec.path.join(" ")).toContain(`Usage: \`wh ${spec.path.join(" ")}`);
      for (const arg of spec.args ?? []) expect(section, arg.syntax).toContain(`| \`${arg.syntax}\` |`);
      for (const flag of Object.values(spec.flags ?? {})) {
        expect(section, flag.syntax).toContain(`| \`${flag.syntax.replaceAll("|", "\\|")}\` |`);
        if (flag.default !== undefined) expect(section, flag.syntax).toContain(`| \`${flag.default}\` |`);
      }
    }
    for (const flag of Object.values(globalFlags)) expect(reference).toContain(`| \`${flag.syntax}\` |`);
  });

  it("lists every command with its summary, linked to its section", () => {
    const reference = commandReference();
    for (const spec of COMMANDS) expect(reference).toContain(`- [wh ${spec.path.join(" ")}](#wh-${spec.path.join("-")}): `);
  });
});
