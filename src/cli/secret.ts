import { secretFromFlagsOrEnv, type SecretFlags } from "../config/secret.js";
import { UsageError } from "../core/errors.js";
import type { CliIo } from "./io.js";

/**
 * The shared secret for sign/verify/listen: --secret, --secret-file, WH_SHARED_SECRET, then the
 * config file's sharedSecret (loaded only when the others are absent, to keep start-up fast).
 */
export async function requireSecret(flags: SecretFlags & { config?: string | undefined; source?: string | undefined }, io: CliIo): Promise<string> {
  const found = await secretFromFlagsOrEnv(flags, io.env);
  if (found !== undefined) return found.value;
  const { loadConfig } = await import("../config/load.js");
  const { config } = await loadConfig(io.cwd, flags.config);
  const { chooseSources } = await import("../config/resolve.js");
  const secret = config.sources === undefined && flags.source === undefined ? config.sharedSecret : chooseSources(config, flags.source, "one")[0]?.sharedSecret;
  if (secret !== undefined) return secret;
  throw new UsageError("no shared secret", { hint: "pass --secret-file FILE or set WH_SHARED_SECRET (or --secret, which other users can see in the process list)" });
}
