// Filling wh serve's spool and waiting for it to drain, for the benchmarks that need a backlog.
import autocannon from "autocannon";
import { uniqueBatchRequests } from "./generate.js";
import { serveMetric } from "./wh-process.js";

/** Events per request, and connections posting them at once. */
export const BATCH = 100;
export const CONNECTIONS = 4;
/** The drain is given up when the spool's depth has not moved for this long. */
export const STALL_MS = 60_000;

const requests = uniqueBatchRequests(BATCH);
const headers = { "content-type": "application/json", authorization: `Basic ${Buffer.from("bench:").toString("base64")}` };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Posts until wh serve says it has accepted `count` events: a refused request is posted again. */
export async function fill(serve, count) {
  let accepted = 0;
  while (accepted < count) {
    await autocannon({
      url: `${serve.url}/v1/batch`,
      method: "POST",
      connections: CONNECTIONS,
      amount: Math.ceil((count - accepted) / BATCH),
      requests,
      headers,
    });
    const now = await serveMetric(serve.url, "wh_serve_events_accepted_total");
    if (!(now > accepted)) throw new Error(`wh serve accepts no more events (${accepted} accepted)`);
    accepted = now;
  }
  return accepted;
}

/**
 * Waits until the spool is empty, polling every `everyMs`, or until it has not moved for `stallMs`;
 * resolves with how many events were still waiting at the end.
 */
export async function drain(serve, everyMs = 250, stallMs = STALL_MS) {
  let depth = await serveMetric(serve.url, "wh_serve_spool_depth");
  let movedMs = performance.now();
  while (depth > 0 && performance.now() - movedMs < stallMs) {
    await sleep(everyMs);
    const now = await serveMetric(serve.url, "wh_serve_spool_depth");
    if (now !== depth) movedMs = performance.now();
    depth = now;
  }
  if (Number.isNaN(depth)) throw new Error("wh serve's /metrics has no wh_serve_spool_depth");
  return depth;
}
