import { ConfigError, WhError } from "../core/errors.js";
import type { CliIo } from "./io.js";
import { runCli } from "./program.js";
import { TurnWriter } from "./turn-writer.js";

/**
 * The one place that turns outcomes and errors into output and an exit code. The first Ctrl-C
 * (or SIGTERM, SIGHUP) asks the running command to stop cleanly; a second one exits at once.
 * A closed standard output (`wh replay --json | head -1`) stops a run the same way, resumably,
 * and exits 141 (as a shell reports SIGPIPE): a run never ends as a success with events unsent.
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if ((process.env.NO_COLOR ?? "") !== "" || argv.includes("--no-color")) process.env.FORCE_COLOR = "0";
  const controller = new AbortController();
  // A TTY shows each line as it comes; a pipe or a file gets a turn's lines in one write.
  const stdout = process.stdout.isTTY === true ? process.stdout : new TurnWriter(process.stdout);
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts += 1;
    if (interrupts > 1) {
      if (stdout instanceof TurnWriter) stdout.flushNow();
      process.exit(130);
    }
    controller.abort();
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const signal of signals) process.on(signal, onSignal);
  let stdoutClosed = false;
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE" && !stdoutClosed) throw error;
    // The reader has gone: nothing more is written there, and the run stops as on Ctrl-C.
    stdoutClosed = true;
    controller.abort();
  });
  // A closed stderr loses the progress lines, never the run.
  process.stderr.on("error", () => undefined);
  const io: CliIo = {
    stdout,
    stderr: process.stderr,
    // Touching process.stdin sets up a TTY or pipe stream: only for the commands that read it.
    get stdin() {
      return process.stdin;
    },
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
  };
  let exitCode: number;
  try {
    exitCode = await runCli(argv, io);
  } catch (error) {
    exitCode = reportError(error, io, argv.includes("--json"));
  } finally {
    for (const signal of signals) process.off(signal, onSignal);
  }
  process.exitCode = stdoutClosed && exitCode === 130 ? 141 : exitCode;
}

/**
 * Says what went wrong on stderr, and with --json also as one JSON object on stdout (machine
 * output is a contract: a script reading stdout sees the error too).
 */
function reportError(error: unknown, io: CliIo, json: boolean): number {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && code.startsWith("commander.")) {
    // commander has printed the message (or the help) already.
    const exitCode = (error as { exitCode?: unknown }).exitCode === 0 || code === "commander.helpDisplayed" || code === "commander.version" ? 0 : 2;
    if (json && exitCode !== 0) writeJsonError(io, { code: "E_USAGE", message: String((error as Error).message).replace(/^error: /, ""), exitCode });
    return exitCode;
  }
  if (error instanceof WhError) {
    io.stderr.write(`wh: ${error.message}\n`);
    if (error.hint !== undefined) io.stderr.write(`  ${error.hint}\n`);
    if (json) writeJsonError(io, { code: error.code, message: error.message, ...(error.hint === undefined ? {} : { hint: error.hint }), ...(error instanceof ConfigError ? { issues: error.issues } : {}), exitCode: error.exitCode });
    return error.exitCode;
  }
  if (json) writeJsonError(io, { code: "E_INTERNAL", message: error instanceof Error ? error.message : String(error), exitCode: 70 });
  io.stderr.write(`wh: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  io.stderr.write("  this is a bug in wh; please report it with the command you ran and the output above\n");
  return 70;
}

// Not a top-level await: the CLI is bundled as CommonJS (scripts/bundle-cli.mjs). main() settles
// every outcome itself; Node keeps running until the command's work is done.
void main();

function writeJsonError(io: CliIo, error: Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify({ error })}\n`);
}
