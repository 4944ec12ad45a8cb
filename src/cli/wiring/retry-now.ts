import type { CliIo } from "./io.js";
import { readKeys } from "./keys.js";
import type { Output } from "../output/render.js";

/** What a "retry now" did, for the log. */
export function retryNowLine(retried: number): string {
  return retried === 0 ? "no delivery is waiting to retry" : `retrying ${retried} waiting deliver${retried === 1 ? "y" : "ies"} now`;
}

/**
 * While a delivering command runs, a person's "retry now" (SIGUSR1 through io.retryNow, or the r
 * key on a terminal when the command does not read stdin) cuts its deliveries' retry waits short,
 * with one line saying how many. Nothing to listen for without deliveries (a dry run). `stop`
 * once the deliveries have ended: the terminal is given back as it was.
 */
export function listenForRetryNow(
  io: CliIo,
  output: Output,
  readsStdin: boolean,
  /** A promise when the deliveries are other threads' (replay --workers). */
  deliveries: { retryNow(): number | Promise<number> } | undefined,
): { stop(): void } {
  if (deliveries === undefined) return { stop: () => undefined };
  const retry = (): void => {
    const retried = deliveries.retryNow();
    if (typeof retried === "number") output.log(retryNowLine(retried));
    else void retried.then((count) => output.log(retryNowLine(count)));
  };
  const unlisten = io.retryNow?.listen(retry);
  const keys = readKeys(io, readsStdin, { r: retry });
  output.retryKey = keys !== undefined;
  return {
    stop() {
      unlisten?.();
      keys?.stop();
      output.retryKey = false;
    },
  };
}
