// The yardstick of issue 11: a bare undici loop of the kind a person writes in thirty lines. It
// parses each NDJSON line, serialises it again, signs it (HMAC-SHA1, X-Signature) and posts it
// with undici's request(), 64 at a time: no validation, no journal, no retries.
// With "ordered", each user's events go one after another in input order (as wh replay's default),
// the others meanwhile: the floor of an ordered replay (issue 36), whose one hot user's events
// can only go one at a time. It reads ahead without bound, which only helps it.
// Usage: node bench/undici-loop.js FILE URL CONCURRENCY [ordered]   (the secret is WH_SHARED_SECRET)
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "undici";

const [file, url, concurrency = "64", order = "unordered"] = process.argv.slice(2);
const secret = process.env.WH_SHARED_SECRET ?? "";
const lines = readFileSync(file, "utf8")
  .split("\n")
  .filter((line) => line !== "");
let next = 0;
let failed = 0;

async function post(event) {
  const body = JSON.stringify(event);
  const signature = createHmac("sha1", secret).update(body).digest("hex");
  const response = await request(url, { method: "POST", headers: { "content-type": "application/json", "x-signature": signature }, body });
  await response.body.dump();
  if (response.statusCode >= 300) failed += 1;
}

async function worker() {
  while (next < lines.length) await post(JSON.parse(lines[next++]));
}

/** Each user's events one after another: an event whose user has one in flight waits behind it, without taking a slot. */
function ordered(slots) {
  const behind = new Map();
  let active = 0;
  return new Promise((resolve) => {
    const start = (user, event) => {
      active += 1;
      // A post that throws ends the process (an unhandled rejection), as one in worker() does.
      void post(event).then(() => {
        active -= 1;
        const queue = behind.get(user);
        if (queue.length > 0) start(user, queue.shift());
        else behind.delete(user);
        fill();
      });
    };
    const fill = () => {
      while (active < slots && next < lines.length) {
        const event = JSON.parse(lines[next++]);
        const user = event.userId ?? event.anonymousId;
        if (behind.has(user)) behind.get(user).push(event);
        else {
          behind.set(user, []);
          start(user, event);
        }
      }
      if (active === 0 && next === lines.length) resolve();
    };
    fill();
  });
}

if (order === "ordered") await ordered(Number(concurrency));
else await Promise.all(Array.from({ length: Number(concurrency) }, worker));
if (failed > 0) {
  console.error(`${failed} of ${lines.length} posts were not answered 2xx`);
  process.exitCode = 1;
}
