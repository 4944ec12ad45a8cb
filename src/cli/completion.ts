import type { Command } from "commander";
import { UsageError } from "../core/errors.js";

export const SHELLS = ["bash", "zsh", "fish"] as const;

interface CommandInfo {
  /** The words that lead to it: ["audience", "sync"]. */
  path: string[];
  flags: string[];
  subcommands: string[];
}

/** Every command of the registry, with its long flags and subcommands, taken from commander itself. */
function describe(program: Command): CommandInfo[] {
  const infos: CommandInfo[] = [];
  const visit = (command: Command, path: string[]): void => {
    const flags = command.options.map((option) => option.long).filter((flag): flag is string => flag !== undefined);
    infos.push({ path, flags: [...flags, "--help"], subcommands: command.commands.map((sub) => sub.name()) });
    for (const sub of command.commands) visit(sub, [...path, sub.name()]);
  };
  visit(program, []);
  return infos;
}

/** The completion script for `shell`: commands, subcommands, flags, and source names from the config at completion time. */
export function completionScript(shell: string, program: Command): string {
  const infos = describe(program);
  switch (shell) {
    case "bash":
      return bashScript(infos);
    case "zsh":
      // zsh runs bash completion functions through bashcompinit: one script, two shells.
      return `autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(infos)}`;
    case "fish":
      return fishScript(infos);
    default:
      throw new UsageError(`wh completion ${JSON.stringify(shell)}: expected one of ${SHELLS.join(", ")}`, { hint: "eval \"$(wh completion bash)\" in ~/.bashrc" });
  }
}

function bashScript(infos: CommandInfo[]): string {
  const cases = infos
    .map((info) => `    "${info.path.join(" ")}") words="${[...info.subcommands, ...info.flags].join(" ")}" ;;`)
    .join("\n");
  return `# wh completion for bash: eval "$(wh completion bash)"
_wh() {
  local cur prev path="" word i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if [[ "$prev" == "--source" ]]; then
    COMPREPLY=( $(compgen -W "$(wh completion --sources 2>/dev/null)" -- "$cur") )
    return
  fi
  for (( i = 1; i < COMP_CWORD; i++ )); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    case "\${path:+$path }$word" in
${infos
  .filter((info) => info.path.length > 0)
  .map((info) => `      "${info.path.join(" ")}") path="${info.path.join(" ")}" ;;`)
  .join("\n")}
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

function fishScript(infos: CommandInfo[]): string {
  const lines = ["# wh completion for fish: wh completion fish > ~/.config/fish/completions/wh.fish", "complete -c wh -f"];
  for (const info of infos) {
    const condition =
      info.path.length === 0 ? "__fish_use_subcommand" : `__fish_seen_subcommand_from ${info.path[info.path.length - 1]}`;
    for (const sub of info.subcommands) lines.push(`complete -c wh -n '${condition}' -a ${sub}`);
    for (const flag of info.flags) {
      const values = flag === "--source" ? " -r -a '(wh completion --sources 2>/dev/null)'" : "";
      lines.push(`complete -c wh -n '${condition}' -l ${flag.slice(2)}${values}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
