// A 100 MB line among ordinary events: wh replay must stay linear in time and bounded in memory
// (it stops buffering a line past 1 MiB). Prints the wall time and peak RSS of the replay.
import { createWriteStream, mkdirSync, rmSync } from "node:fs";
import { once } from "node:events";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { sampleBody } from "./generate.js";
import { runWh } from "./wh-process.js";

const dataDir = fileURLToPath(new URL("./.data/", import.meta.url));
const LINE_MB = Number(process.env.BENCH_LONG_LINE_MB ?? 100);

mkdirSync(dataDir, { recursive: true });
const file = `${dataDir}long-line-${LINE_MB}mb.ndjson`;
const out = createWriteStream(file);
for (let index = 0; index < 10; index += 1) out.write(`${sampleBody()}\n`);
const block = Buffer.alloc(1024 * 1024, "a");
out.write('{"type":"track","userId":"u1","event":"');
for (let index = 0; index < LINE_MB; index += 1) if (!out.write(block)) await once(out, "drain");
out.write('"}\n');
for (let index = 0; index < 10; index += 1) out.write(`${sampleBody()}\n`);
out.end();
await once(out, "finish");

const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => response.end());
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const url = `http://127.0.0.1:${server.address().port}/hook`;
const { code, wallMs, peakMb } = await runWh(["replay", file, "--url", url, "--quiet"]);
server.close();
if (code !== 1) throw new Error(`wh replay exited ${code}, expected 1 (one invalid line)`);
console.log(
  `long line:  a ${LINE_MB} MB line among 20 events: ${(wallMs / 1000).toFixed(2)} s, peak RSS ${peakMb.toFixed(1)} MB (the line is counted, not held: bounded memory)`,
);
for (const each of [file, `${file}.failed.ndjson`, `${file}.wh-journal`]) rmSync(each, { force: true });
