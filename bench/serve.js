// wh serve: the time from accept to delivery at a steady rate, measured per event at a receiver
// from each event's receivedAt. (How fast it accepts is bench/serve-accept.js.)
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServeProcess } from "./wh-process.js";

const DURATION_S = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const STEADY_RATE = 500; // events per second, in requests of 10
const auth = `Basic ${Buffer.from("bench:").toString("base64")}`;

/** A receiver in this process: answers 200 at once, and hands each delivered body to `onEvent`. */
async function startReceiver(onEvent) {
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      onEvent(JSON.parse(Buffer.concat(chunks).toString("utf8")), Date.now());
      response.writeHead(200, { "content-length": "0" }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${server.address().port}/hook`, close: () => new Promise((resolve) => server.close(resolve)) };
}

const event = (index) => ({
  type: "track",
  userId: `user-${index % 1000}`,
  event: "Order Completed",
  properties: { orderId: `o-${index}`, total: 99.5, currency: "EUR" },
  timestamp: new Date().toISOString(),
});

// Requests of 10 events, STEADY_RATE events/s.
const dataDir = mkdtempSync(join(tmpdir(), "wh-bench-serve-"));
const delays = [];
const receiver = await startReceiver((body, at) => delays.push(at - Date.parse(body.receivedAt)));
const serve = await startServeProcess(["--url", receiver.url, "--data-dir", dataDir, "--mode", "actions"]);
try {
  const perRequest = 10;
  const interval = (1000 * perRequest) / STEADY_RATE;
  const started = Date.now();
  let sent = 0;
  while (Date.now() - started < DURATION_S * 1000) {
    const batch = Array.from({ length: perRequest }, (_, index) => event(sent + index));
    sent += perRequest;
    const response = await fetch(`${serve.url}/v1/batch`, {
      method: "POST",
      body: JSON.stringify({ batch }),
      headers: { "content-type": "application/json", authorization: auth },
    });
    if (response.status !== 200) throw new Error(`wh serve answered ${response.status}`);
    await response.arrayBuffer();
    const next = started + (sent / perRequest) * interval;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
  }
  while (delays.length < sent) await new Promise((resolve) => setTimeout(resolve, 20));
  const sorted = [...delays].sort((a, b) => a - b);
  const at = (share) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))];
  console.log(
    `serve latency (node bench/serve.js): ${sent} events at ${STEADY_RATE}/s in requests of ${perRequest}: accept to delivery p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted.at(-1)} ms`,
  );
} finally {
  await serve.stop();
  await receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}
