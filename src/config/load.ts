import { resolve } from "node:path";
import { cosmiconfig } from "cosmiconfig";
import { ConfigError } from "../core/errors.js";
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
  const explorer = cosmiconfig("wh", { searchStrategy: "project" });
  let result;
  const target = configPath === undefined ? undefined : resolve(cwd, configPath);
  try {
    result = target === undefined ? await explorer.search(cwd) : await explorer.load(target);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const problem = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (error as Error).message;
    throw new ConfigError([problem], { source: target ?? cwd, cause: error });
  }
  if (result === null || result.isEmpty === true) return { config: {}, filepath: result?.filepath };
  const parsed = parseConfig(result.config);
  if (!parsed.ok) throw new ConfigError(parsed.issues, { source: result.filepath });
  return { config: parsed.value, filepath: result.filepath };
}
