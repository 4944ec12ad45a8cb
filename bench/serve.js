// wh serve: accepted events/s under autocannon posting batches (each request's events written
// and fdatasync'd to the spool before the 200), and the time from accept to delivery at a
// steady rate, measured per event at a receiver from each event's receivedAt.
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { startServeProcess } from "./wh-process.js";

const BATCH = 100;
const DURATION_S = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const STEADY_RATE = 500; // events per second, in requests of 10
const auth = `Basic ${Buffer.from("bench:").toString("base64")}`;

/** A receiver in this process: answers 200 at once; with `onEvent`, sees each delivered body. */
async function startReceiver(onEvent) {
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      if (onEvent) onEvent(JSON.parse(Buffer.concat(chunks).toString("utf8")), Date.now());
      response.writeHead(200, { "content-length": "0" }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${server.address().port}/hook`, close: () => new Promise((resolve) => server.close(resolve)) };
}

const startServe = (url, dataDir, extra = []) => startServeProcess(["--url", url, "--data-dir", dataDir, ...extra]);

const event = (index) => ({ type: "track", userId: `user-${index % 1000}`, event: "Order Completed", properties: { orderId: `o-${index}`, total: 99.5, currency: "EUR" }, timestamp: new Date().toISOString() });
const metric = async (url, name) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? Number.NaN);

const dataDir = mkdtempSync(join(tmpdir(), "wh-bench-serve-"));
try {
  // 1. Accepting: autocannon posts batches of 100 as fast as wh serve answers them.
  {
    const receiver = await startReceiver();
    const serve = await startServe(receiver.url, join(dataDir, "accept"), ["--concurrency", "64"]);
    const body = JSON.stringify({ batch: Array.from({ length: BATCH }, (_, index) => event(index)), sentAt: new Date().toISOString() });
    const result = await autocannon({ url: `${serve.url}/v1/batch`, method: "POST", connections: 16, duration: DURATION_S, body, headers: { "content-type": "application/json", authorization: auth } });
    const accepted = await metric(serve.url, "wh_serve_events_accepted_total");
    const seconds = (new Date(result.finish) - new Date(result.start)) / 1000;
    console.log(
      `serve accept: ${Math.round(accepted / seconds)} events/s accepted (${Math.round(result.requests.average)} batch requests/s of ${BATCH}, 16 connections, ${DURATION_S} s; each request synced to disk before its 200; p99 ${result.latency.p99} ms); non-2xx ${result.non2xx}`,
    );
    await serve.stop();
    await receiver.close();
  }
  // 2. Accept to delivery at a steady rate: requests of 10 events, STEADY_RATE events/s.
  {
    const delays = [];
    const receiver = await startReceiver((body, at) => delays.push(at - Date.parse(body.receivedAt)));
    const serve = await startServe(receiver.url, join(dataDir, "steady"), ["--mode", "actions"]);
    const perRequest = 10;
    const interval = (1000 * perRequest) / STEADY_RATE;
    const started = Date.now();
    let sent = 0;
    while (Date.now() - started < DURATION_S * 1000) {
      const batch = Array.from({ length: perRequest }, (_, index) => event(sent + index));
      sent += perRequest;
      const response = await fetch(`${serve.url}/v1/batch`, { method: "POST", body: JSON.stringify({ batch }), headers: { "content-type": "application/json", authorization: auth } });
      if (response.status !== 200) throw new Error(`wh serve answered ${response.status}`);
      await response.arrayBuffer();
      const next = started + (sent / perRequest) * interval;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
    while (delays.length < sent) await new Promise((resolve) => setTimeout(resolve, 20));
    const sorted = [...delays].sort((a, b) => a - b);
    const at = (share) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))];
    console.log(`serve latency: ${sent} events at ${STEADY_RATE}/s in requests of ${perRequest}: accept to delivery p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted.at(-1)} ms`);
    await serve.stop();
    await receiver.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
