import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { shellQuote } from "../../src/core/shell-quote.js";
import { builtBin, cleanEnv, type RunOptions, type WhProcess, watchChild } from "./run-wh.js";

/**
 * `node bin/wh.cjs …args` on a pseudo-terminal, as a person at a terminal runs it: its stdin,
 * stdout and stderr are one TTY. util-linux's script(1) (in every Debian, no native module)
 * makes the terminal: what the test writes to `child.stdin` is typed at it (`"\u0003"` is Ctrl-C,
 * a SIGINT unless wh reads raw keys), and stdout is everything the terminal shows, stdout and
 * stderr interleaved, with "\r\n" line ends; `stderr` is script's own, for its errors. `-e`
 * makes script exit with wh's code. `afterwards`, a shell command, runs on the same terminal once wh
 * has exited (script then exits with its code): to see the state wh left the terminal in. The
 * shell then survives a Ctrl-C (it traps SIGINT; wh, which it starts, does not inherit that): one
 * typed as wh exits on its own reaches the shell, and killed it before `afterwards` ran.
 */
export function spawnWhInPty(
  args: readonly string[],
  options: RunOptions & { cwd: string; columns?: number; afterwards?: string },
): WhProcess<ChildProcessWithoutNullStreams> {
  const command = [process.execPath, builtBin(), ...args].map(shellQuote).join(" ");
  // The terminal's size, set before wh starts (a spinner fits its line to it).
  const sized = `stty cols ${options.columns ?? 120} rows 40 2>/dev/null; ${options.afterwards === undefined ? `exec ${command}` : `trap : INT; ${command}; ${options.afterwards}`}`;
  const child = spawn("script", ["-qefc", sized, "/dev/null"], { cwd: options.cwd, env: cleanEnv(options.env), stdio: ["pipe", "pipe", "pipe"] });
  const wh = watchChild(child);
  if (options.input !== undefined) child.stdin.write(options.input);
  return wh;
}

/** What a terminal shows, as plain lines: colours and cursor moves dropped, "\r\n" made "\n". */
export function screenText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a terminal's escape sequences are what this removes.
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r\n/g, "\n");
}
