// `wh listen --ui` while its inspector page stops reading (a background tab, a sleeping laptop):
// 60,000 requests (0.9 KB events, 16 at a time) come while one client holds the page's event
// stream open and reads nothing. The resident set of wh's process is printed every 10,000
// requests, beside the floor: the same run with no page open at all. Then the stalled client reads:
// what it is sent (the "missed" count and the newest entries) is printed too.
// Needs `npm run build` first (it runs bin/wh.cjs).
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { trackingBatch } from "./generate.js";
import { rssMb } from "./proc-stat.js";

const REQUESTS = Number(process.env.BENCH_INSPECTOR_REQUESTS ?? 60_000);
const STEP = 10_000;
const CONCURRENCY = 16;
const bin = fileURLToPath(new URL("../bin/wh.cjs", import.meta.url));

async function startListen() {
  const child = spawn(process.execPath, [bin, "listen", "--json", "--ui"], { stdio: ["ignore", "pipe", "ignore"] });
  const found = {};
  for await (const line of createInterface({ input: child.stdout })) {
    Object.assign(found, JSON.parse(line));
    if (found.listening !== undefined && found.inspector !== undefined) break;
  }
  // What wh prints for each request is read and dropped.
  child.stdout.resume();
  return { child, listening: found.listening, inspector: new URL(found.inspector) };
}

/** A page that opens the event stream and then reads nothing. */
async function stalledPage(inspector) {
  const socket = connect(Number(inspector.port), inspector.hostname);
  socket.pause();
  socket.write(`GET /events${inspector.search} HTTP/1.1\r\nHost: ${inspector.host}\r\n\r\n`);
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

/** Reads what the stalled page is sent once it reads again, until the newest entry (its id is the request count). */
async function readAfterStall(socket, last) {
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk) => {
    text += chunk;
  });
  socket.resume();
  const deadline = Date.now() + 30_000;
  while (!text.includes(`"id":${last},`) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  const missed = /event: missed\ndata: \{"missed":(\d+)\}/.exec(text)?.[1];
  return {
    mb: text.length / 1e6,
    entries: text.split("event: entry\n").length - 1,
    missed: missed === undefined ? "none" : Number(missed).toLocaleString("en"),
  };
}

async function run(withPage) {
  const { child, listening, inspector } = await startListen();
  const socket = withPage ? await stalledPage(inspector) : undefined;
  const dispatcher = new Agent({ connections: CONCURRENCY });
  const bodies = trackingBatch(1_000, 0).batch.map((event) => JSON.stringify(event));
  const rss = [rssMb(child.pid)];
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const index = next;
      next += 1;
      const answer = await request(listening, {
        method: "POST",
        body: bodies[index % bodies.length],
        headers: { "content-type": "application/json" },
        dispatcher,
      });
      await answer.body.dump();
      if ((index + 1) % STEP === 0) rss.push(rssMb(child.pid));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const read = socket === undefined ? undefined : await readAfterStall(socket, REQUESTS);
  await dispatcher.close();
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  return { rss, read };
}

const [stalled, floor] = [await run(true), await run(false)];
console.log(`wh listen --ui, ${REQUESTS.toLocaleString("en")} requests; RSS (MB) at 0, ${STEP.toLocaleString("en")}, … requests`);
console.log(`  a page open and reading nothing: ${stalled.rss.map((mb) => mb.toFixed(0)).join(" ")}`);
console.log(`  no page open (the floor):        ${floor.rss.map((mb) => mb.toFixed(0)).join(" ")}`);
console.log(
  `  the stalled page, once it read: ${stalled.read.mb.toFixed(1)} MB, ${stalled.read.entries.toLocaleString("en")} entries, "missed" ${stalled.read.missed}`,
);
