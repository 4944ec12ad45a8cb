import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { tracked } from "./children.js";

const execFileAsync = promisify(execFile);

/**
 * Runs a copied command with a real `sh -c` in `cwd`, where `wh` and `curl` are shell functions
 * that print the words they were given (and `wh … --data -` what it reads on standard input, after
 * a "<stdin>" word): the words as the shell parsed them. A command that lets text out of its quotes
 * passes other words, or runs something else (a file appears in `cwd`).
 */
export async function shellWords(command: string, cwd: string): Promise<string[]> {
  const standIns = `wh() { printf '%s\\0' wh "$@"; [ "$4" = - ] && { printf '<stdin>\\0'; cat; printf '\\0'; }; true; }; curl() { printf '%s\\0' curl "$@"; }`;
  const running = execFileAsync("/bin/sh", ["-c", `${standIns}\n${command}`], { cwd });
  tracked(running.child);
  const { stdout } = await running;
  return stdout.split("\0").slice(0, -1);
}
