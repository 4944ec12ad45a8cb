import { readInput } from "../../adapters/read-input.js";
import { UsageError } from "../../core/errors.js";
import { BATCH_VERDICT, verifyBody } from "../../core/sign.js";
import { STANDARD_FAILURES, verifyStandard } from "../../core/standard-webhooks.js";
import type { FlagValues } from "../flags/spec.js";
import type { verifyFlags } from "../flags/tables.js";
import { type CliIo, commandClock, type GlobalFlags } from "../wiring/io.js";
import { requireSecret } from "../../config/secret.js";

export type VerifyFlags = FlagValues<typeof verifyFlags>;

/**
 * `wh verify --signature HEX [FILE|-]`: exit 0 on a match, 1 on a mismatch or a malformed
 * signature. `wh verify --capture FILE`: every record of a `wh listen --out` capture. With
 * --scheme standard, --signature is the webhook-signature header, checked with --id and
 * --timestamp, the timestamp within --tolerance of now.
 */
export async function runVerify(file: string | undefined, flags: VerifyFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const standard = flags.scheme === "standard";
  if (!standard && (flags.id !== undefined || flags.timestamp !== undefined)) throw new UsageError("--id and --timestamp go with --scheme standard");
  if (standard && flags.explain === true) throw new UsageError("--explain explains X-Signature mismatches; a Standard Webhooks verdict says its reason itself");
  if (flags.capture !== undefined) {
    if (file !== undefined || flags.signature !== undefined || flags.id !== undefined || flags.timestamp !== undefined)
      throw new UsageError("--capture checks the signatures the capture holds: give no --signature, --id, --timestamp or body file with it");
    const { runVerifyCapture } = await import("./verify-capture.js");
    return runVerifyCapture(flags.capture, flags, globals, io);
  }
  const needed = standard ? "--signature, --id and --timestamp are" : "--signature HEX is";
  if (flags.signature === undefined || (standard && (flags.id === undefined || flags.timestamp === undefined)))
    throw new UsageError(`${needed} required (or --capture FILE to check a capture of wh listen)`);
  const secret = await requireSecret(flags, io.env, io.cwd);
  const body = await readInput(file, io, "body");
  if (standard) {
    const headers = { id: flags.id, timestamp: String(flags.timestamp), signature: flags.signature };
    const result = verifyStandard(secret, headers, body, { nowMs: commandClock(io).now(), toleranceSeconds: flags.tolerance / 1000 });
    if (globals.json === true) io.stdout.write(`${JSON.stringify({ valid: result.ok, ...(result.ok ? {} : { reason: result.reason }) })}\n`);
    else if (globals.quiet !== true)
      io.stdout.write(result.ok ? "valid: a signature matches the id, timestamp and body\n" : `invalid: ${STANDARD_FAILURES[result.reason]}\n`);
    return result.ok ? 0 : 1;
  }
  const result = verifyBody(secret, body, flags.signature);
  let explanation: string | undefined;
  if (!result.ok && flags.explain === true) {
    const { explainMismatch } = await import("../../core/explain-signature.js");
    explanation = explainMismatch(secret, body, flags.signature);
  }
  if (globals.json === true) {
    io.stdout.write(
      `${JSON.stringify({ valid: result.ok, ...(result.ok ? { batch: result.kind === "batch" } : { reason: result.reason }), ...(explanation === undefined ? {} : { explanation }) })}\n`,
    );
  } else if (globals.quiet !== true) {
    const reason = result.ok ? "" : result.reason === "malformed-signature" ? " (not a 40-character hex signature)" : "";
    const valid = result.ok && result.kind === "batch" ? `valid: ${BATCH_VERDICT}\n` : "valid: the signature matches the body\n";
    io.stdout.write(result.ok ? valid : `invalid: the signature does not match the body${reason}\n`);
    if (explanation !== undefined) io.stdout.write(`likely cause: ${explanation}\n`);
  }
  return result.ok ? 0 : 1;
}
