import { expect } from "vitest";
import { startInProcess } from "../../helpers/in-process.js";
import { killedAfterEach, lines, type WhProcess } from "../../helpers/run-wh.js";

interface Listening {
  listening: string;
  port: number;
}

/**
 * For a test file of wh listen: call it once at the top. `listen` starts `wh listen --json ...`
 * and waits for the record that gives its URL; `keep` registers another wh. Both are stopped
 * after each test if they still run.
 */
export function listeners(): {
  listen: (args: readonly string[], options?: Parameters<typeof startInProcess>[1]) => Promise<{ wh: WhProcess; url: string }>;
  keep: <P extends WhProcess>(wh: P) => P;
} {
  const keep = killedAfterEach();
  return {
    keep,
    async listen(args, options = {}) {
      const wh = keep(await startInProcess(["listen", "--port", "0", "--json", ...args], options));
      const stdout = await wh.waitForStdout((text) => text.includes("\n"));
      const record = JSON.parse(stdout.slice(0, stdout.indexOf("\n"))) as Listening;
      expect(record.listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect(record.port).toBeGreaterThan(0);
      return { wh, url: record.listening };
    },
  };
}

/** The JSON records wh listen has printed so far, after the first (listening) one. */
export function requestRecords(wh: WhProcess): Record<string, unknown>[] {
  return lines(wh.stdout())
    .slice(1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function waitForRecords(wh: WhProcess, count: number): Promise<string> {
  return wh.waitForStdout((text) => lines(text).length >= count + 1 && text.endsWith("\n"));
}

export async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  await response.arrayBuffer();
  return response.status;
}
