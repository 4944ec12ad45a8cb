import { readInput } from "../../adapters/read-input.js";
import { signBody } from "../../core/sign.js";
import type { FlagValues } from "../flags/spec.js";
import type { secretFlags } from "../flags/tables.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { requireSecret } from "../../config/secret.js";

type SignFlags = FlagValues<typeof secretFlags>;

/** `wh sign [FILE|-]`: prints the X-Signature of the body's exact bytes. */
export async function runSign(file: string | undefined, flags: SignFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const secret = await requireSecret(flags, io.env, io.cwd);
  const body = await readInput(file, io, "body");
  const signature = signBody(secret, body);
  io.stdout.write(globals.json === true ? `${JSON.stringify({ signature, bytes: body.length })}\n` : `${signature}\n`);
  return 0;
}
