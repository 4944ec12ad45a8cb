import { loadConfig } from "../../config/load.js";
import { UsageError } from "../../core/errors.js";
import { globalFlags } from "../flags/tables.js";
import { type FlagTable, longName } from "../flags/spec.js";
import type { CliIo } from "./io.js";
import { COMMANDS } from "../registry/index.js";

const SHELLS = ["bash", "zsh", "fish"] as const;

interface CommandInfo {
  /** The words that lead to it: ["audience", "sync"]. */
  path: readonly string[];
  /** Subcommands, and the values of its first argument (the message types of `wh send`). */
  words: string[];
  flags: string[];
}

/** A flag that takes a value, with what to offer for it. */
interface ValueFlag {
  flag: string;
  complete: readonly string[] | "file" | "sources";
}

/** Every command of the registry: its subcommands, argument values and long flags. */
function describe(): CommandInfo[] {
  const root: CommandInfo = { path: [], words: [], flags: [...flagNames(globalFlags), "--help", "--version"] };
  const infos = [root];
  for (const command of COMMANDS) {
    const parent = infos.find((info) => info.path.join(" ") === command.path.slice(0, -1).join(" "));
    parent?.words.push(command.path.at(-1) ?? "");
    infos.push({ path: command.path, words: [...(command.args?.[0]?.complete ?? [])], flags: [...flagNames(command.flags ?? {}), "--help"] });
  }
  return infos;
}

function flagNames(table: FlagTable): string[] {
  return Object.values(table).map(longName);
}

/** Every flag that takes a value and has values to offer, once (a name means the same everywhere). */
function valueFlags(): ValueFlag[] {
  const found = new Map<string, ValueFlag>();
  for (const command of COMMANDS) {
    for (const spec of Object.values(command.flags ?? {})) {
      if (spec.complete !== undefined) found.set(longName(spec), { flag: longName(spec), complete: spec.complete });
    }
  }
  return [...found.values()];
}

/** The completion script for `shell`: commands, subcommands, flags, their values, and source names from the config at completion time. */
export function completionScript(shell: string): string {
  const infos = describe();
  switch (shell) {
    case "bash":
      return bashScript(infos);
    case "zsh":
      // zsh runs bash completion functions through bashcompinit: one script, two shells.
      return `autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(infos)}`;
    case "fish":
      return fishScript(infos);
    default:
      throw new UsageError(`wh completion ${JSON.stringify(shell)}: expected one of ${SHELLS.join(", ")}`, {
        hint: 'eval "$(wh completion bash)" in ~/.bashrc',
      });
  }
}

/** `wh completion [shell]`, and `--sources`, which the scripts call for the config's source names. */
export async function runCompletion(shell: string | undefined, flags: { sources?: boolean }, io: CliIo): Promise<number> {
  if (flags.sources === true) {
    const { config } = await loadConfig(io.cwd).catch(() => ({ config: {} as { sources?: Record<string, unknown> } }));
    for (const name of Object.keys(config.sources ?? {})) io.stdout.write(`${name}\n`);
    return 0;
  }
  io.stdout.write(completionScript(shell ?? ""));
  return 0;
}

/** Whether some value has a space (a sample's name: "Order Completed"): the words must be split on lines, and quoted. */
function spaced(values: readonly string[]): boolean {
  return values.some((value) => value.includes(" "));
}

function bashValueCase({ flag, complete }: ValueFlag): string {
  if (complete === "file") return `    ${flag}) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;`;
  if (complete === "sources") return `    ${flag}) COMPREPLY=( $(compgen -W "$(wh completion --sources 2>/dev/null)" -- "$cur") ); return ;;`;
  if (!spaced(complete)) return `    ${flag}) COMPREPLY=( $(compgen -W "${complete.join(" ")}" -- "$cur") ); return ;;`;
  // Split on newlines only; match what was typed without its quotes or backslashes; offer each
  // name with its spaces escaped, so it lands on the line as one word.
  const words = `$'${complete.join("\\n")}'`;
  return `    ${flag}) local IFS=$'\\n' word=\${cur//[\\\\\\"\\']/}; COMPREPLY=( $(compgen -W ${words} -- "$word") ); COMPREPLY=( "\${COMPREPLY[@]// /\\\\ }" ); return ;;`;
}

function bashScript(infos: CommandInfo[]): string {
  const cases = infos.map((info) => `    "${info.path.join(" ")}") words="${[...info.words, ...info.flags].join(" ")}" ;;`).join("\n");
  const paths = infos
    .filter((info) => info.path.length > 0)
    .map((info) => `      "${info.path.join(" ")}") path="${info.path.join(" ")}" ;;`)
    .join("\n");
  return `# wh completion for bash: eval "$(wh completion bash)"
_wh() {
  local cur prev path="" word i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
${valueFlags().map(bashValueCase).join("\n")}
  esac
  for (( i = 1; i < COMP_CWORD; i++ )); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    case "\${path:+$path }$word" in
${paths}
    esac
  done
  local words=""
  case "$path" in
${cases}
  esac
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -o default -F _wh wh
`;
}

function fishValues(flag: string, values: Map<string, ValueFlag>): string {
  const complete = values.get(flag)?.complete;
  if (complete === undefined) return "";
  if (complete === "file") return " -r -F";
  if (complete === "sources") return " -r -a '(wh completion --sources 2>/dev/null)'";
  // fish splits -a's list as a command line: a name with spaces goes in quotes of its own.
  return spaced(complete) ? ` -r -a "${complete.map((value) => `'${value}'`).join(" ")}"` : ` -r -a '${complete.join(" ")}'`;
}

function fishScript(infos: CommandInfo[]): string {
  const values = new Map(valueFlags().map((value) => [value.flag, value]));
  const lines = ["# wh completion for fish: wh completion fish > ~/.config/fish/completions/wh.fish", "complete -c wh -f"];
  for (const info of infos) {
    const condition = info.path.length === 0 ? "__fish_use_subcommand" : `__fish_seen_subcommand_from ${info.path.at(-1)}`;
    for (const word of info.words) lines.push(`complete -c wh -n '${condition}' -a ${word}`);
    for (const flag of info.flags) lines.push(`complete -c wh -n '${condition}' -l ${flag.slice(2)}${fishValues(flag, values)}`);
  }
  return `${lines.join("\n")}\n`;
}
