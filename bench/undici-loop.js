// The yardstick of issue 11: a bare undici loop of the kind a person writes in thirty lines. It
// parses each NDJSON line, serialises it again, signs it (HMAC-SHA1, X-Signature) and posts it
// with undici's request(), 64 at a time: no validation, no order, no journal, no retries.
// Usage: node bench/undici-loop.js FILE URL CONCURRENCY   (the secret is WH_SHARED_SECRET)
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "undici";

const [file, url, concurrency = "64"] = process.argv.slice(2);
const secret = process.env.WH_SHARED_SECRET ?? "";
const lines = readFileSync(file, "utf8")
  .split("\n")
  .filter((line) => line !== "");
let next = 0;
let failed = 0;

async function worker() {
  while (next < lines.length) {
    const body = JSON.stringify(JSON.parse(lines[next++]));
    const signature = createHmac("sha1", secret).update(body).digest("hex");
    const response = await request(url, { method: "POST", headers: { "content-type": "application/json", "x-signature": signature }, body });
    await response.body.dump();
    if (response.statusCode >= 300) failed += 1;
  }
}

await Promise.all(Array.from({ length: Number(concurrency) }, worker));
if (failed > 0) {
  console.error(`${failed} of ${lines.length} posts were not answered 2xx`);
  process.exitCode = 1;
}
