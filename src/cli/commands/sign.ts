import { readInput } from "../../adapters/read-input.js";
import { signBody } from "../../core/sign.js";
import { isWebhookId, signStandard, webhookIdOf } from "../../core/standard-webhooks.js";
import { UsageError } from "../../core/errors.js";
import type { FlagValues } from "../flags/spec.js";
import type { signFlags } from "../flags/tables.js";
import { type CliIo, commandClock, type GlobalFlags } from "../wiring/io.js";
import { requireSecret } from "../../config/secret.js";

type SignFlags = FlagValues<typeof signFlags>;

/**
 * `wh sign [FILE|-]`: prints the X-Signature of the body's exact bytes; with --scheme standard,
 * the webhook-signature of `${id}.${timestamp}.${body}` (--json adds the id and timestamp used).
 */
export async function runSign(file: string | undefined, flags: SignFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const standard = flags.scheme === "standard";
  if (!standard && (flags.id !== undefined || flags.timestamp !== undefined)) throw new UsageError("--id and --timestamp go with --scheme standard");
  const secret = await requireSecret(flags, io.env, io.cwd);
  const body = await readInput(file, io, "body");
  if (!standard) {
    const signature = signBody(secret, body);
    io.stdout.write(globals.json === true ? `${JSON.stringify({ signature, bytes: body.length })}\n` : `${signature}\n`);
    return 0;
  }
  if (flags.id !== undefined && !isWebhookId(flags.id))
    throw new UsageError("--id must be 1 to 256 visible ASCII characters without '.' (the signed content is split by dots)");
  const id = flags.id ?? webhookIdOf(body);
  const timestamp = flags.timestamp ?? Math.floor(commandClock(io).now() / 1000);
  const signature = signStandard(secret, id, timestamp, body);
  io.stdout.write(globals.json === true ? `${JSON.stringify({ signature, id, timestamp, bytes: body.length })}\n` : `${signature}\n`);
  return 0;
}
