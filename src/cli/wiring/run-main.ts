import { ConfigError, WhError } from "../../core/errors.js";
import type { CliIo } from "./io.js";
import { runCli } from "./program.js";

/**
 * Runs one wh command line against `io` and returns its exit code: the one place that turns
 * outcomes and errors into output and an exit code. Everything of the process (signals, a closed
 * stdout, process.exitCode) is main.ts's; tests call this in-process with an in-memory io.
 */
export async function runMain(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await runCli(argv, io);
  } catch (error) {
    return reportError(error, io, argv.includes("--json"));
  }
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
    // A command's help shown as an error (commander says "(outputHelp)") means no command was named.
    const message = code === "commander.help" ? "no command given: wh --help lists them" : String((error as Error).message).replace(/^error: /, "");
    if (json && exitCode !== 0) writeJsonError(io, { code: "E_USAGE", message, exitCode });
    return exitCode;
  }
  if (error instanceof WhError) {
    io.stderr.write(`wh: ${error.message}\n`);
    if (error.hint !== undefined) io.stderr.write(`  ${error.hint}\n`);
    if (json)
      writeJsonError(io, {
        code: error.code,
        message: error.message,
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        ...(error instanceof ConfigError ? { issues: error.issues } : {}),
        exitCode: error.exitCode,
      });
    return error.exitCode;
  }
  if (json) writeJsonError(io, { code: "E_INTERNAL", message: error instanceof Error ? error.message : String(error), exitCode: 70 });
  io.stderr.write(`wh: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  io.stderr.write("  this is a bug in wh; please report it with the command you ran and the output above\n");
  return 70;
}

function writeJsonError(io: CliIo, error: Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify({ error })}\n`);
}
