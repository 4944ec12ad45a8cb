// wh serve with Redis Streams as its queue: accepted and delivered events/s with one process and
// with three, against one redis-server (appendonly yes, appendfsync everysec: Redis's usual
// durable setting), autocannon posting batches of 100 events as an SDK sends them
// (bench/generate.js). Beside them, in the same run and on the same server, the yardsticks for
// accepting: a bare node-redis loop of one XADD per event, each awaited before the next (no
// pipelining), and the same loop with one MULTI of 100 XADDs per batch, which is what wh sends per
// request. Skipped, with a line saying so, when redis-server is not installed.
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@redis/client";
import { durableRedisArgs, freePort, REDIS_SERVER, spawnRedis } from "../test/redis/redis-servers.mjs";
import { trackingBatch, uniqueBatchRequests } from "./generate.js";
import { postBatches, servesAccepted, startServeProcess } from "./wh-process.js";

const DURATION_S = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const LOOP_SECONDS = Math.min(5, DURATION_S);
const BATCH = 100;
const auth = `Basic ${Buffer.from("bench:").toString("base64")}`;
const requests = uniqueBatchRequests(BATCH);
const eventBytes = Math.round(JSON.stringify(trackingBatch(BATCH, "r1")).length / BATCH);

if (spawnSync(REDIS_SERVER, ["--version"]).status !== 0) {
  console.log("serve redis: skipped (no redis-server: apt-get install redis-server)");
} else {
  const dir = mkdtempSync(join(tmpdir(), "wh-bench-redis-"));
  const port = await freePort();
  const redis = await spawnRedis(durableRedisArgs(port, dir));
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
    const loop = await xaddLoop(`redis://127.0.0.1:${port}/0`, "each");
    const multiLoop = await xaddLoop(`redis://127.0.0.1:${port}/0`, "multi");
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
      const started = Date.now();
      const results = await postBatches(serves, requests, DURATION_S, auth);
      const acceptSeconds = (Date.now() - started) / 1000;
      const refused = results.reduce((sum, result) => sum + result.non2xx, 0);
      // What the processes say they accepted (autocannon does not count the requests its end cut
      // off, which the server may still have taken): read until every accepted event has arrived.
      const acceptedNow = () => servesAccepted(serves);
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
      if (processes === 1) {
        const rate = accepted / acceptSeconds;
        console.log(
          `serve redis accept (node bench/serve-redis.js; BENCH_SERVE_SECONDS=${DURATION_S}): wh serve --queue, 1 process, 16 connections, batches of ${BATCH} events of ${eventBytes} bytes, ${Math.round(rate)} events/s accepted; the bare loops on the same redis-server, ${LOOP_SECONDS} s each: one XADD per event awaited in turn ${Math.round(loop)} events/s (wh ${(rate / loop).toFixed(2)}×), one MULTI of ${BATCH} XADDs per batch awaited in turn ${Math.round(multiLoop)} events/s (wh ${(rate / multiLoop).toFixed(2)}×)`,
        );
      }
    }
  } finally {
    receiver.close();
    redis.kill("SIGTERM");
    await once(redis, "exit");
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The bare node-redis loop for LOOP_SECONDS: each event of each batch serialised and XADDed, one
 * command awaited at a time ("each"), or one MULTI per batch awaited at a time ("multi"). Resolves
 * with its events/s.
 */
async function xaddLoop(url, shape) {
  const client = await createClient({ url }).connect();
  const stream = "bench:xadd";
  let events = 0;
  const started = performance.now();
  try {
    while (performance.now() - started < LOOP_SECONDS * 1000) {
      const { batch } = trackingBatch(BATCH, `loop-${events}`);
      if (shape === "multi") {
        const multi = client.multi();
        for (const event of batch) multi.xAdd(stream, "*", { r: JSON.stringify(event) });
        await multi.exec();
      } else {
        for (const event of batch) await client.xAdd(stream, "*", { r: JSON.stringify(event) });
      }
      events += batch.length;
    }
    return (events * 1000) / (performance.now() - started);
  } finally {
    await client.del(stream);
    await client.close();
  }
}

function startServe(queue, hook) {
  return startServeProcess(["--queue", queue, "--partitions", "64", "--url", hook, "--concurrency", "64"]);
}
