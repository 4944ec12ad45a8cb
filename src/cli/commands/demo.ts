import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { startReceiver } from "../../adapters/receiver.js";
import { DEFAULT_RETRY_WINDOW_MS } from "../../config/resolve.js";
import { prepareLine } from "../../core/message/prepare.js";
import { createDeliverer } from "../deliverer.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { describeTargets, Output } from "../render.js";
import { printRequest } from "./listen.js";

/** The sample events shipped with wh: one of each message type. */
export const SAMPLE_EVENTS = fileURLToPath(new URL("../../../fixtures/events.ndjson", import.meta.url));

/**
 * `wh demo`: starts the receiver in-process on a free loopback port with a fresh random secret,
 * delivers every sample event to it, signed, and shows each one verified.
 */
export async function runDemo(globals: GlobalFlags, io: CliIo): Promise<number> {
  const output = new Output(io, globals);
  const secret = randomBytes(24).toString("base64url");
  let verified = 0;
  const receiver = await startReceiver({
    secret,
    onRequest: (request) => {
      if (request.signature === "valid") verified += 1;
      printRequest(output, request);
    },
  });
  output.log(`receiver listening on ${receiver.url}, checking X-Signature with a fresh random secret`);
  const deliverer = await createDeliverer({ configPath: undefined, destinations: [], caFiles: [], timeoutMs: 5_000, retryWindowMs: DEFAULT_RETRY_WINDOW_MS });
  const destination = { source: undefined, enabled: true, targets: [{ url: new URL(receiver.url), headers: {} }], sharedSecret: secret, secretOrigin: undefined };
  let delivered = 0;
  let sent = 0;
  try {
    const lines = (await readFile(SAMPLE_EVENTS, "utf8")).split("\n").filter((line) => line.trim() !== "");
    for (const [index, line] of lines.entries()) {
      const prepared = prepareLine(line, { now: () => new Date(), newId: randomUUID });
      if (!prepared.ok) throw new Error(`${SAMPLE_EVENTS} line ${index + 1}: ${prepared.error}`);
      sent += 1;
      const report = await deliverer.deliver(prepared.message.body, destination, { signal: io.signal });
      if (report.outcome === "delivered") delivered += 1;
      else output.result(output.out.red(`✖ ${prepared.message.type}: ${describeTargets(report)}`));
    }
  } finally {
    await deliverer.close();
    await receiver.close();
  }
  const ok = delivered === sent && verified === sent;
  output.record({ sent, delivered, verified });
  output.result(`${ok ? output.out.green("✔") : output.out.red("✖")} ${delivered} of ${sent} events delivered, ${verified} signatures verified`);
  return io.signal.aborted ? 130 : ok ? 0 : 1;
}
