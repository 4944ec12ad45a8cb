import { resolve } from "node:path";
import { readFile } from "../adapters/read-input.js";
import { UsageError } from "../core/errors.js";
import { stripBom } from "../core/text.js";

export type SecretOrigin = "--secret" | "--secret-file" | "WH_SHARED_SECRET" | "config file";

export interface SecretFlags {
  secret?: string | undefined;
  secretFile?: string | undefined;
}

export interface ResolvedSecret {
  value: string;
  origin: SecretOrigin;
}

/**
 * The secret from flags, else from WH_SHARED_SECRET. Kept apart from the config loader so that
 * `wh sign` and `wh verify` start without loading cosmiconfig.
 */
export async function secretFromFlagsOrEnv(flags: SecretFlags, env: NodeJS.ProcessEnv, cwd: string): Promise<ResolvedSecret | undefined> {
  if (flags.secret !== undefined && flags.secretFile !== undefined) throw new UsageError("give --secret or --secret-file, not both");
  if (flags.secret !== undefined) {
    if (flags.secret === "") throw new UsageError("--secret must not be empty");
    return { value: flags.secret, origin: "--secret" };
  }
  if (flags.secretFile !== undefined) return { value: await readSecretFile(flags.secretFile, cwd), origin: "--secret-file" };
  const fromEnv = env.WH_SHARED_SECRET;
  return fromEnv === undefined || fromEnv === "" ? undefined : { value: fromEnv, origin: "WH_SHARED_SECRET" };
}

/**
 * The shared secret for sign and verify: --secret, --secret-file, WH_SHARED_SECRET, then the
 * config file's sharedSecret (or that of --source), loaded only when the others are absent so
 * that these commands start without cosmiconfig and zod.
 */
export async function requireSecret(
  flags: SecretFlags & { config?: string | undefined; source?: string | undefined },
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<string> {
  const found = await secretFromFlagsOrEnv(flags, env, cwd);
  if (found !== undefined) return found.value;
  const { loadConfig } = await import("./load.js");
  const { config } = await loadConfig(cwd, flags.config);
  const { chooseSources } = await import("./resolve.js");
  const secret = config.sources === undefined && flags.source === undefined ? config.sharedSecret : chooseSources(config, flags.source, "one")[0]?.sharedSecret;
  if (secret !== undefined) return secret;
  throw new UsageError("no shared secret", {
    hint: "pass --secret-file FILE or set WH_SHARED_SECRET (or --secret, which other users can see in the process list)",
  });
}

/** Reads a secret file (relative to `cwd`); one trailing newline (as editors write) is not part of the secret. */
async function readSecretFile(path: string, cwd: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(resolve(cwd, path), "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (error as Error).message;
    throw new UsageError(`--secret-file ${path}: ${reason}`, { cause: error });
  }
  // A byte-order mark is the editor's, not the secret's: signing with it would fail every receiver.
  const value = stripBom(text).replace(/\r?\n$/, "");
  if (value === "") throw new UsageError(`--secret-file ${path}: the file is empty`);
  return value;
}
