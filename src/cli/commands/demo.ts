import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { startReceiver } from "../../adapters/listen-server.js";
import { parseFlags } from "../flags/spec.js";
import { replayFlags } from "../flags/tables.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";
import { printRequest } from "./listen.js";
import { runReplay } from "./replay.js";

/**
 * The sample events shipped with wh (one of each message type), found from this module upward:
 * the module is dist/cli/commands/demo.js, or the bundled CLI's dist/cli-bundle/demo.cjs.
 */
const SAMPLE_EVENTS = findUpward(dirname(fileURLToPath(import.meta.url)), join("fixtures", "events.ndjson"));

function findUpward(from: string, relative: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, relative);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return join(from, relative);
  }
}

/**
 * `wh demo`: starts the receiver (`wh listen`) in-process on a free loopback port with a fresh
 * random secret, replays the sample events to it with `wh replay` and shows each one verified;
 * then replays the receiver's NDJSON capture and checks that the very same bytes arrive again.
 */
export async function runDemo(globals: GlobalFlags, io: CliIo): Promise<number> {
  const output = new Output(io, globals);
  const secret = randomBytes(24).toString("base64url");
  const workDir = await mkdtemp(join(tmpdir(), "wh-demo-"));
  const capture = join(workDir, "captured.ndjson");
  const rounds: { body: string; verified: boolean }[][] = [[], []];
  let round = 0;
  const receiver = await startReceiver({
    secret,
    out: capture,
    onRequest: (request) => {
      rounds[round]?.push({ body: request.body.toString("utf8"), verified: request.signature === "valid" });
      if (round === 0) printRequest(output, request);
    },
  });
  const replay = (file: string, name: string, replayIo: CliIo): Promise<number> =>
    runReplay(
      file,
      parseFlags(replayFlags, {
        url: [receiver.url],
        concurrency: "1",
        deadLetter: join(workDir, `${name}.failed.ndjson`),
        journal: join(workDir, `${name}.wh-journal`),
      }),
      globals,
      { ...replayIo, env: { ...io.env, WH_SHARED_SECRET: secret } },
    );
  try {
    output.log(`receiver listening on ${receiver.url}, checking X-Signature with a fresh random secret`);
    const sent = await replay(SAMPLE_EVENTS, "samples", io);
    if (sent !== 0) return sent;
    round = 1;
    // The second round only checks the bytes: its own report goes nowhere. It replays a copy of
    // the capture: the receiver goes on appending this round's requests to the capture itself.
    const snapshot = join(workDir, "captured-round-1.ndjson");
    await copyFile(capture, snapshot);
    const resent = await replay(snapshot, "capture", { ...io, stdout: new PassThrough().resume(), stderr: new PassThrough().resume() });
    const [first = [], second = []] = rounds;
    const verified = first.filter((request) => request.verified).length;
    const identical =
      resent === 0 && second.length === first.length && second.every((request, index) => request.body === first[index]?.body && request.verified);
    output.record({ received: first.length, verified, captureReplayedIdentically: identical });
    output.result(
      `${verified === first.length && identical ? output.out.green("✔") : output.out.red("✖")} ${verified} of ${first.length} signatures verified; replaying the receiver's capture sent ${identical ? "the very same bytes, verified again" : "something else"}`,
    );
    return verified === first.length && identical ? 0 : 1;
  } finally {
    await receiver.close();
    await rm(workDir, { recursive: true, force: true });
  }
}
