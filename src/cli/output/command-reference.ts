import { CONFIG_KEY_FLAGS } from "../flags/config-keys.js";
import { type FlagTable, longName } from "../flags/spec.js";
import { globalFlags } from "../flags/tables.js";
import type { Command } from "../registry/command-spec.js";
import { PROGRAM_HELP } from "../registry/help.js";
import { COMMANDS } from "../registry/index.js";

/**
 * docs/commands.md, made from the registry and the flag tables as `--help` is, so the reference
 * cannot say what the command line does not (scripts/command-reference.mjs writes it; a test
 * fails when the file in git is not this).
 */

/** Text from the tables as Markdown shows it literally: `<file>` would be an HTML tag, `|` a new cell. */
const literal = (text: string): string => text.replace(/[\\`*_[\]<>|]/g, (character) => `\\${character}`);

/** A table cell's code span: only `|` needs escaping inside it (GitHub's tables split on it first). */
const code = (text: string): string => `\`${text.replaceAll("|", "\\|")}\``;

/** GitHub's anchor for a heading made of words, spaces and hyphens. */
const anchor = (heading: string): string => heading.toLowerCase().replaceAll(" ", "-");

const name = (spec: Command): string => `wh ${spec.path.join(" ")}`;

function flagRows(table: FlagTable, required: readonly string[] = []): string[] {
  const rows = Object.entries(table).map(([key, spec]) => {
    // Most repeatable flags say so in their description already.
    const repeatable = spec.repeatable === true && !spec.description.includes("repeatable");
    const notes = [required.includes(key) ? "required" : "", repeatable ? "repeatable" : ""].filter((note) => note !== "");
    const description = literal(spec.description) + (notes.length === 0 ? "" : ` (${notes.join(", ")})`);
    return `| ${code(spec.syntax)} | ${description} | ${spec.default === undefined ? "" : code(spec.default)} |`;
  });
  return ["| flag | what it does | default |", "| --- | --- | --- |", ...rows];
}

function usage(spec: Command): string {
  const args = (spec.args ?? []).map((arg) => ` ${arg.syntax}`).join("");
  return `${name(spec)}${args}${Object.keys(spec.flags ?? {}).length === 0 ? "" : " [flags]"}`;
}

/** A help text as the terminal shows it, in a block of its own. */
const helpBlock = (help: string): string[] => ["```text", ...help.replace(/^\n+|\s+$/g, "").split("\n"), "```", ""];

function commandSection(spec: Command): string[] {
  const lines = [`## ${name(spec)}`, "", literal(spec.description), "", `Usage: ${code(usage(spec))}`, ""];
  if ((spec.args ?? []).length > 0) {
    lines.push("| argument | what it is |", "| --- | --- |", ...(spec.args ?? []).map((arg) => `| ${code(arg.syntax)} | ${literal(arg.description)} |`), "");
  }
  if (Object.keys(spec.flags ?? {}).length > 0) lines.push(...flagRows(spec.flags ?? {}, spec.required), "");
  if (spec.help !== undefined) lines.push(...helpBlock(spec.help));
  return lines;
}

/** Each key of the config file with the flags that set it for one run, or "file only". */
function configKeyRows(): string[] {
  const rows = Object.entries(CONFIG_KEY_FLAGS).map(
    ([key, flags]) => `| ${code(key)} | ${flags === "file only" ? "file only" : flags.map((spec) => code(longName(spec))).join(", ")} |`,
  );
  return ["| key | set for one run by |", "| --- | --- |", ...rows];
}

/** The whole page: the commands listed, the global flags, each command's section, the config keys. */
export function commandReference(): string {
  const index = COMMANDS.map((spec) => `- [${name(spec)}](#${anchor(name(spec))}): ${literal(spec.summary)}`);
  const lines = [
    "# Command reference",
    "",
    "Generated from the command registry (`src/cli/registry/`) and the flag tables (`src/cli/flags/`) by `npm run docs`: do not edit by hand.",
    "Behaviour beyond the flags is in the other pages of [docs/](../README.md#documentation).",
    "",
    ...index,
    "",
    "## Global flags",
    "",
    "Taken by every command, before or after its name.",
    "",
    ...flagRows(globalFlags),
    "",
    ...helpBlock(PROGRAM_HELP),
    ...COMMANDS.flatMap(commandSection),
    "## Config keys",
    "",
    "Each key of the config file ([docs/cli.md](cli.md#configuration)) and the flags that set it for one run instead; a key marked file only has none.",
    "",
    ...configKeyRows(),
  ];
  return `${lines.join("\n").trimEnd()}\n`;
}
