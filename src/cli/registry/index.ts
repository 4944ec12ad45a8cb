import { check } from "./check.js";
import type { Command } from "./command-spec.js";
import { ingest, replay, send, serveCommands, syncCommands } from "./delivering.js";
import { samplesCommands } from "./samples.js";
import { completion, configCommands, demo, listen, sign, verify } from "./tools.js";

/** Every command, in the order `wh --help` lists them; a group comes before its subcommands. */
export const COMMANDS: readonly Command[] = [
  send,
  replay,
  ingest,
  sign,
  verify,
  check,
  listen,
  ...samplesCommands,
  ...serveCommands,
  ...syncCommands,
  ...configCommands,
  demo,
  completion,
];
