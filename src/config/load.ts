import { resolve } from "node:path";
import { cosmiconfig, defaultLoaders, type Loader } from "cosmiconfig";
import { ConfigError } from "../core/errors.js";
import { stripBom } from "../core/text.js";
import { parseConfig, type WhConfig } from "./schema.js";

export interface LoadedConfig {
  config: WhConfig;
  /** The file it came from; undefined when no config file was found. */
  filepath: string | undefined;
}

/**
 * Finds and reads the config (cosmiconfig, module `wh`, searched from `cwd` up to the project
 * root), or reads `configPath` when given, then validates it. Throws ConfigError (exit 2).
 */
export async function loadConfig(cwd: string, configPath?: string): Promise<LoadedConfig> {
  // A byte-order mark before JSON or YAML is read past, as everywhere else in wh.
  const withoutBom =
    (load: Loader): Loader =>
    (filepath, content) =>
      load(filepath, stripBom(content));
  const loaders = {
    ".json": withoutBom(defaultLoaders[".json"]),
    ".yaml": withoutBom(defaultLoaders[".yaml"]),
    ".yml": withoutBom(defaultLoaders[".yml"]),
    noExt: withoutBom(defaultLoaders.noExt),
  };
  const explorer = cosmiconfig("wh", { searchStrategy: "project", loaders });
  let result: Awaited<ReturnType<typeof explorer.search>>;
  const target = configPath === undefined ? undefined : resolve(cwd, configPath);
  try {
    result = target === undefined ? await explorer.search(cwd) : await explorer.load(target);
  } catch (error) {
    const { source, problem } = describeLoadError(error, target ?? cwd);
    throw new ConfigError([problem], { source });
  }
  if (result === null || result.isEmpty === true) return { config: {}, filepath: result?.filepath };
  const parsed = parseConfig(result.config);
  if (!parsed.ok) throw new ConfigError(parsed.issues, { source: result.filepath });
  return { config: parsed.value, filepath: result.filepath };
}

/**
 * Says why a config file could not be read, without quoting it: the parsers' own messages show
 * the file's text around the error, and that text may hold the shared secret.
 */
function describeLoadError(error: unknown, fallback: string): { source: string; problem: string } {
  const details = error as { code?: unknown; name?: unknown; filepath?: unknown; reason?: unknown; mark?: { line?: unknown; column?: unknown } };
  const source = typeof details.filepath === "string" ? details.filepath : fallback;
  if (details.code === "ENOENT") return { source, problem: "no such file" };
  if (details.code === "EISDIR") return { source, problem: "is a directory" };
  if (details.name === "YAMLException") {
    const line = typeof details.mark?.line === "number" ? details.mark.line + 1 : undefined;
    const column = typeof details.mark?.column === "number" ? details.mark.column + 1 : undefined;
    return { source, problem: `not valid YAML${line === undefined ? "" : ` (line ${line}, column ${column})`}: ${String(details.reason)}` };
  }
  const message = error instanceof Error ? error.message : String(error);
  // cosmiconfig's own message names only the extension, never the file's text.
  if (message.startsWith("No loader specified for"))
    return { source, problem: `${message.replace("No loader specified for", "no loader for")}: use .json, .yaml, .yml, .js, .cjs, .mjs or .ts` };
  if (details.name === "JSONError") {
    const token = /Unexpected (token '.'|end of JSON input|non-whitespace character)/.exec(message)?.[0];
    return { source, problem: `not valid JSON${token === undefined ? "" : ` (${token.replace("Unexpected", "unexpected")})`}` };
  }
  // A JavaScript config that throws: its own message is the user's words, not the file's text.
  if (/\.(c|m)?(j|t)s$/.test(source) && error instanceof Error) return { source, problem: `threw ${error.name}: ${error.message}` };
  return { source, problem: `could not be loaded (${error instanceof Error ? error.name : "error"})` };
}
