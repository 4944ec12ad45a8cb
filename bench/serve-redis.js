// wh serve with Redis Streams as its queue: accepted and delivered events/s with one process and
// with three, against one redis-server (appendonly yes, appendfsync everysec: Redis's usual
// durable setting). Skipped, with a line saying so, when redis-server is not installed.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { startServeProcess } from "./wh-process.js";

const DURATION_S = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const BATCH = 100;
const auth = `Basic ${Buffer.from("bench:").toString("base64")}`;

if (spawnSync("redis-server", ["--version"]).status !== 0) {
  console.log("serve redis: skipped (no redis-server: apt-get install redis-server)");
} else {
  const dir = mkdtempSync(join(tmpdir(), "wh-bench-redis-"));
  const port = await freePort();
  const redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"], { stdio: ["ignore", "pipe", "inherit"] });
  await waitFor(redis.stdout, "Ready to accept connections");
  let delivered = 0;
  let lastDelivery = 0;
  const ids = new Set();
  const receiver = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      delivered += 1;
      ids.add(JSON.parse(Buffer.concat(chunks).toString("utf8")).messageId);
      lastDelivery = Date.now();
      response.writeHead(200, { "content-length": "0" }).end();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
  try {
    for (const [processes, db] of [
      [1, 1],
      [3, 2],
    ]) {
      delivered = 0;
      ids.clear();
      const queue = `redis://127.0.0.1:${port}/${db}`;
      const serves = [];
      for (let index = 0; index < processes; index += 1) serves.push(await startServe(queue, hook));
      // Let the forwarders share the partitions before the load starts.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const body = JSON.stringify({ batch: Array.from({ length: BATCH }, (_, index) => ({ type: "track", userId: `user-${index % 1000}`, event: "Order Completed", properties: { total: 99.5 } })) });
      const started = Date.now();
      const results = await Promise.all(
        serves.map((serve) => autocannon({ url: `${serve.url}/v1/batch`, method: "POST", connections: Math.ceil(16 / processes), duration: DURATION_S, body, headers: { "content-type": "application/json", authorization: auth } })),
      );
      const acceptSeconds = (Date.now() - started) / 1000;
      const refused = results.reduce((sum, result) => sum + result.non2xx, 0);
      // What the processes say they accepted (autocannon does not count the requests its end cut
      // off, which the server may still have taken): read until every accepted event has arrived.
      const acceptedNow = async () =>
        (await Promise.all(serves.map(async (serve) => Number(/^wh_serve_events_accepted_total (\d+)$/m.exec(await (await fetch(`${serve.url}/metrics`)).text())?.[1] ?? 0)))).reduce((sum, count) => sum + count, 0);
      let accepted = await acceptedNow();
      while (ids.size < accepted && Date.now() - lastDelivery < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        accepted = await acceptedNow();
      }
      const deliverSeconds = (lastDelivery - started) / 1000;
      console.log(
        `serve redis: ${processes} process${processes === 1 ? "" : "es"}: ${Math.round(accepted / acceptSeconds)} events/s accepted (batches of ${BATCH}, ${DURATION_S} s), ${Math.round(ids.size / deliverSeconds)} events/s delivered (${ids.size} of ${accepted} in ${deliverSeconds.toFixed(1)} s, ${delivered - ids.size} duplicates); ${refused} requests refused`,
      );
      await Promise.all(serves.map((serve) => serve.stop()));
    }
  } finally {
    receiver.close();
    redis.kill("SIGTERM");
    await once(redis, "exit");
    rmSync(dir, { recursive: true, force: true });
  }
}

function startServe(queue, hook) {
  return startServeProcess(["--queue", queue, "--partitions", "64", "--url", hook, "--concurrency", "64"]);
}

async function freePort() {
  const server = createNetServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function waitFor(stream, text) {
  return new Promise((resolve) => {
    let seen = "";
    stream.on("data", (chunk) => {
      seen += chunk;
      if (seen.includes(text)) resolve();
    });
  });
}
