// The floor of bench/samples-generate.js: COUNT copies of one fixed line written to FILE with the
// same backpressure (a chunk at a time, waiting for drain), no generating at all.
import { createWriteStream } from "node:fs";
import { once } from "node:events";

const [count, file, lineBytes] = process.argv.slice(2).map((arg, index) => (index === 1 ? arg : Number(arg)));
const line = `${JSON.stringify({ type: "track", pad: "x".repeat(Math.max(0, lineBytes - 30)) })}\n`;
const out = createWriteStream(file);
let chunk = "";
for (let index = 0; index < count; index += 1) {
  chunk += line;
  if (chunk.length < 64 * 1024) continue;
  if (!out.write(chunk)) await once(out, "drain");
  chunk = "";
}
out.end(chunk);
await once(out, "finish");
