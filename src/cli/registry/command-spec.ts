import { type FlagTable, type FlagValues, parseFlags } from "../flags/spec.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";

/** A positional argument: `<file>` is required, `[file]` optional. */
export interface ArgSpec {
  readonly syntax: string;
  readonly description: string;
  /** What shell completion offers for it (the message types of `wh send`). */
  readonly complete?: readonly string[];
}

/** What the command line gives a command: its arguments, commander's flag values, what the user typed. */
export interface ParsedLine {
  readonly args: ReadonlyArray<string | undefined>;
  /** commander's values, by the flag table's keys: text, not yet parsed. */
  readonly values: Record<string, unknown>;
  /** The flags the user gave (not defaults), as typed: what a resume command must repeat. */
  readonly given: Record<string, unknown>;
  readonly globals: GlobalFlags;
  readonly io: CliIo;
}

/** What a command's run receives: the line, with its flags parsed by its table. */
export type CommandCall<F> = Omit<ParsedLine, "values"> & { readonly flags: F };

/**
 * One command, as data: commander's command, its help and shell completion are made from it. A
 * group (`config`, `audience`) has no run of its own. `run` loads the command's module only when
 * it runs (a literal import(), which the bundle turns into a file of its own).
 */
export interface CommandSpec<T extends FlagTable> {
  /** The words that name it: ["serve", "dead-letters", "list"]. */
  readonly path: readonly string[];
  /**
   * Its line in the list of commands (`wh --help`, `wh serve --help`): a lowercase phrase starting
   * with a verb, no full stop, as commander's own lines are; `description` is its help page's sentence.
   */
  readonly summary: string;
  readonly description: string;
  readonly args?: readonly ArgSpec[];
  readonly flags?: T;
  /** Flags without which the command cannot run (commander says so before it starts). */
  readonly required?: ReadonlyArray<keyof T & string>;
  /** Help text after the options: behaviour, examples. */
  readonly help?: string;
  readonly run?: (call: CommandCall<FlagValues<T>>) => Promise<number>;
}

/** A command as the program runs it: its run parses the line's flags with the command's table. */
export type Command = Omit<CommandSpec<FlagTable>, "run"> & { readonly run?: (line: ParsedLine) => Promise<number> };

/** Declares a command, typing its run's flags from its table. */
export function command<const T extends FlagTable>(spec: CommandSpec<T>): Command {
  const { run, flags } = spec;
  return { ...spec, run: run === undefined ? undefined : ({ values, ...line }) => run({ ...line, flags: parseFlags(flags ?? ({} as T), values) }) };
}

/** `$ line` examples for a help text. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join("\n")}\n`;
}
