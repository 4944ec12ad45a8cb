import { Command as Commander, CommanderError, Option } from "commander";
import { UsageError } from "../../core/errors.js";
import { VERSION } from "../../version.js";
import type { FlagTable } from "../flags/spec.js";
import { globalFlags } from "../flags/tables.js";
import type { CliIo, GlobalFlags } from "./io.js";
import type { Command } from "../registry/command-spec.js";
import { PROGRAM_HELP } from "../registry/help.js";
import { COMMANDS } from "../registry/index.js";
import { closest } from "./suggest.js";

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** commander's options for a flag table. */
function addFlags(target: Commander, table: FlagTable, required: readonly string[] = []): void {
  for (const [key, spec] of Object.entries(table)) {
    const add = required.includes(key) ? target.requiredOption.bind(target) : target.option.bind(target);
    if (spec.repeatable === true) add(spec.syntax, spec.description, collect);
    else if (spec.default !== undefined) add(spec.syntax, spec.description, spec.default);
    else add(spec.syntax, spec.description);
  }
}

/** The values the user gave (not the defaults), as typed: what a resume command must repeat. */
function givenValues(command: Commander, table: FlagTable): Record<string, unknown> {
  const values = command.optsWithGlobals();
  return Object.fromEntries(
    Object.keys(table).flatMap((key) => (values[key] === undefined || command.getOptionValueSourceWithGlobals(key) === "default" ? [] : [[key, values[key]]])),
  );
}

/** Builds commander's command for one registry entry, under its parent (defined before it). */
function define(program: Commander, spec: Command, run: (command: Commander, args: Array<string | undefined>) => Promise<void>): void {
  let parent = program;
  for (const word of spec.path.slice(0, -1)) parent = parent.commands.find((command) => command.name() === word) ?? parent.command(word);
  const command = parent
    .command(spec.path.at(-1) ?? "")
    .description(spec.description)
    .summary(spec.summary);
  for (const arg of spec.args ?? []) command.argument(arg.syntax, arg.description);
  addFlags(command, spec.flags ?? {}, spec.required);
  if (spec.help !== undefined) command.addHelpText("after", spec.help);
  if (spec.run === undefined) return;
  const children = subcommands(spec);
  // A command with both an action and subcommands (wh serve) gets a mistyped subcommand as an
  // argument: commander would say "too many arguments"; this names it and suggests the nearest.
  if (children.length > 0) command.allowExcessArguments(true);
  command.action(async (...received: unknown[]) => {
    const extra = command.args[spec.args?.length ?? 0];
    if (children.length > 0 && extra !== undefined) {
      const suggestion = closest(extra, children);
      throw new UsageError(
        `unknown command ${JSON.stringify(extra)} for 'wh ${spec.path.join(" ")}'${suggestion === undefined ? "" : ` (did you mean ${suggestion}?)`}`,
        { hint: `its commands: ${children.join(", ")} (wh ${spec.path.join(" ")} --help)` },
      );
    }
    // commander passes the arguments, then the options, then the command itself.
    await run(command, received.slice(0, spec.args?.length ?? 0) as Array<string | undefined>);
  });
}

/** The names of the commands right under `spec` in the registry. */
function subcommands(spec: Command): string[] {
  const depth = spec.path.length;
  return COMMANDS.filter((other) => other.path.length === depth + 1 && spec.path.every((word, i) => other.path[i] === word)).map(
    (other) => other.path[depth] ?? "",
  );
}

/**
 * The program: the registry's commands (cli/registry) on commander, each run with its flags
 * parsed by its table. Only the command being run is defined (commander builds every option of
 * every command it is given, a start-up cost `wh sign` in a loop pays each time); help and a name
 * that matches nothing see them all.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Commander("wh")
    .description("Send, replay and verify signed webhook events, the way the Segment Webhooks destination delivers them.")
    .version(VERSION, "-v, --version")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) });
  addFlags(program, globalFlags);
  // -V too, as commander's own default spells it: a habit wh keeps working.
  program.addOption(new Option("-V").hideHelp());
  program.on("option:V", () => {
    io.stdout.write(`${VERSION}\n`);
    throw new CommanderError(0, "commander.version", VERSION);
  });
  const named = argv.find((arg) => !arg.startsWith("-"));
  const wanted = COMMANDS.filter((spec) => spec.path[0] === named);
  for (const spec of wanted.length === 0 ? COMMANDS : wanted) {
    define(program, spec, async (command, args) => {
      const values = command.optsWithGlobals();
      exitCode = (await spec.run?.({ args, values, given: givenValues(command, spec.flags ?? {}), globals: program.opts<GlobalFlags>(), io })) ?? 0;
    });
  }
  program.addHelpText("after", PROGRAM_HELP);
  await program.parseAsync(argv, { from: "user" });
  return exitCode;
}
