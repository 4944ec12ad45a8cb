// bench/receiver.js started in its own process, and the signals it answers as calls.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("./receiver.js", import.meta.url));

/** A receiver answering `status` (200, or a down webhook's 503 with Retry-After: 1) after `delayMs`. */
export async function startReceiverProcess({ delayMs = 0, status = 200 } = {}) {
  const child = spawn(process.execPath, [script, String(delayMs), String(status)], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const { port } = JSON.parse((await lines.next()).value);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    /** The requests answered in each second since the last call (SIGUSR2), the last second cut short. */
    async perSecond() {
      child.kill("SIGUSR2");
      return JSON.parse((await lines.next()).value).perSecond;
    },
    /** The webhook comes back: 200 from now on (SIGHUP). */
    answerOk() {
      child.kill("SIGHUP");
    },
    /** Resolves with the requests it answered in all. */
    async stop() {
      child.kill("SIGTERM");
      return JSON.parse((await lines.next()).value).requests;
    },
  };
}
