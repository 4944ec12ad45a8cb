import type { CliIo } from "./io.js";

const CTRL_C = "\u0003";

/**
 * Reads single keys from a terminal (raw mode) while a command runs, and calls the key's action.
 * In raw mode the terminal no longer turns Ctrl-C into SIGINT: a Ctrl-C read here does what SIGINT
 * does (io.interrupt). Returns undefined, reading nothing, when stdin is not a terminal, when the
 * command reads its input from it, or when there is no interrupt to pass Ctrl-C on to. `stop`
 * restores the terminal; main.ts restores it too when the process exits some other way.
 */
export function readKeys(io: CliIo, readsStdin: boolean, actions: Readonly<Record<string, () => void>>): { stop(): void } | undefined {
  const interrupt = io.interrupt;
  if (readsStdin || interrupt === undefined) return undefined;
  const stdin = io.stdin as CliIo["stdin"] & { setRawMode?: (raw: boolean) => unknown };
  if (stdin.isTTY !== true || typeof stdin.setRawMode !== "function") return undefined;
  const onData = (chunk: Buffer | string): void => {
    for (const key of chunk.toString()) {
      if (key === CTRL_C) interrupt();
      else actions[key.toLowerCase()]?.();
    }
  };
  stdin.setRawMode(true);
  stdin.on("data", onData);
  stdin.resume();
  return {
    stop() {
      stdin.off("data", onData);
      stdin.setRawMode?.(false);
      // Paused, the terminal no longer keeps the process alive.
      stdin.pause();
    },
  };
}
