import { createRequire } from "node:module";
import type { Agent } from "undici";

/**
 * undici's Agent without undici's index, which also loads fetch, WebSocket, caches and the rest:
 * about 60 ms at start-up, for every `wh send` and `wh replay`. The Agent on its own loads in about
 * 20 ms. Should a later undici 7 move the file, the whole package is loaded instead. (The bundled
 * CLI resolves the file when it is built: scripts/bundle-cli.mjs.)
 */
export function loadAgent(): typeof Agent {
  const require = createRequire(import.meta.url);
  try {
    return require("undici/lib/dispatcher/agent.js") as typeof Agent;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw error;
    return (require("undici") as typeof import("undici")).Agent;
  }
}
