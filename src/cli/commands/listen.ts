import { once } from "node:events";
import { startReceiver, type ReceivedRequest } from "../../adapters/receiver.js";
import { secretFromFlagsOrEnv } from "../../config/secret.js";
import { UsageError } from "../../core/errors.js";
import { parseIntFlag } from "../../core/int-flag.js";
import { BATCH_VERDICT } from "../../core/sign.js";
import type { CliIo, GlobalFlags } from "../io.js";
import { Output, summarizeMessage } from "../render.js";

export interface ListenFlags {
  port?: string;
  host?: string;
  secret?: string;
  secretFile?: string;
  status?: string;
  out?: string;
}

/** `wh listen`: a local receiver that verifies each request and prints it, until Ctrl-C. */
export async function runListen(flags: ListenFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const port = parseIntFlag("--port", flags.port, 0, 0, 65_535);
  const status = parseIntFlag("--status", flags.status, 200, 100, 599);
  const secret = (await secretFromFlagsOrEnv(flags, io.env))?.value;
  const output = new Output(io, globals);
  const receiver = await startReceiver({
    host: flags.host,
    port,
    secret,
    status,
    out: flags.out,
    onRequest: (request) => printRequest(output, request),
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "EADDRINUSE") throw new UsageError(`--port ${port}: the port is in use`, { cause: error });
    if (error.code === "EACCES") throw new UsageError(`--port ${port}: permission denied`, { cause: error });
    throw error;
  });
  output.log(`listening on ${receiver.url} (${secret === undefined ? "signatures not checked: no secret" : "checking X-Signature"}; answering ${status}${flags.out === undefined ? "" : `; capturing to ${flags.out}`})`);
  output.log("press Ctrl-C to stop");
  output.record({ listening: receiver.url, port: receiver.port });
  if (!io.signal.aborted) await once(io.signal, "abort");
  await receiver.close();
  output.log("stopped");
  return 0;
}

/** One line per request: what it was, whether its signature held, and the answer. */
export function printRequest(output: Output, request: ReceivedRequest): void {
  output.record({
    receivedAt: request.receivedAt.toISOString(),
    method: request.method,
    path: request.path,
    signature: request.signature,
    status: request.status,
    captured: request.captured,
    body: request.json ?? request.body.toString("utf8"),
  });
  const c = output.out;
  const mark = request.status < 300 ? c.green("✔") : c.red("✖");
  const signature =
    request.signature === "valid"
      ? c.green("signature verified")
      : request.signature === "valid-batch"
        ? c.green(`signature verified: ${BATCH_VERDICT}`)
        : request.signature === "unchecked"
          ? c.dim("signature not checked")
          : c.red(`signature ${request.signature}`);
  output.result(`${mark} ${request.status} ${request.method} ${request.path} ${summarizeMessage(request.json)} — ${signature}`);
}
