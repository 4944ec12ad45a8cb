import { singleQuoted } from "../../core/shell-quote.js";

/** What a command is made of: an entry of the inspector, all of it from the network. */
export interface CommandSource {
  method: string;
  path: string;
  type: string;
  headers: Record<string, string>;
  body: string;
}

export interface CommandBuilders {
  /** `curl -X 'POST' '<url>' -H '<name: value>'… --data-binary '<body>'`: the request as it came. */
  curlCommand(entry: CommandSource, origin: string): string;
  /** `wh send '<type>' --data '<body>' --url '<url>'` (the body on standard input when it starts with `@` or is `-`). */
  whSendCommand(entry: CommandSource, origin: string): string;
}

/**
 * The inspector page's "copy as curl" and "copy as wh send --data". Everything they put in a
 * command came from the network, so every value is one single-quoted shell word (singleQuoted).
 * Quoting keeps the shell out; what `wh send` makes of its words is kept in hand too: the type is
 * one of `messageTypes` (else track, which `wh send` then reports against the body's type), since
 * a word starting with `-` would be an option, and a body that `--data` would take for a file
 * name is given on standard input.
 *
 * The page runs this very function: its script (src/browser/inspector/) imports it, and is bundled
 * with it (scripts/bundle-inspector-page.mjs).
 */
export function commandBuilders(messageTypes: readonly string[]): CommandBuilders {
  const quote = singleQuoted;
  const url = (entry: CommandSource, origin: string): string => quote(origin.replace(/\/$/, "") + entry.path);
  return {
    curlCommand(entry, origin) {
      const parts = ["curl", "-X", quote(entry.method), url(entry, origin)];
      for (const [name, value] of Object.entries(entry.headers)) {
        // The connection's own headers: curl sets them for the request it makes.
        if (["host", "content-length", "connection"].includes(name.toLowerCase())) continue;
        parts.push("-H", quote(`${name}: ${value}`));
      }
      parts.push("--data-binary", quote(entry.body));
      return parts.join(" ");
    },
    whSendCommand(entry, origin) {
      const send = `wh send ${quote(messageTypes.includes(entry.type) ? entry.type : "track")}`;
      // `--data @FILE` reads a file and `--data -` standard input: a body that looks like either goes in on standard input.
      if (entry.body === "-" || entry.body.startsWith("@")) return `printf '%s' ${quote(entry.body)} | ${send} --data - --url ${url(entry, origin)}`;
      return `${send} --data ${quote(entry.body)} --url ${url(entry, origin)}`;
    },
  };
}
