// The yardstick of issue 11: a bare undici loop of the kind a person writes in thirty lines. It
// parses each NDJSON line, serialises it again, signs it (HMAC-SHA1, X-Signature) and posts it
// with undici's request(), 64 at a time: no validation, no journal, no retries.
// With "ordered", each user's events go one after another in input order (as wh replay's default),
// the others meanwhile: the floor of an ordered replay (issue 36), whose one hot user's events
// can only go one at a time. It reads ahead without bound, which only helps it.
// VIA "dispatch" posts with an Agent's dispatch() instead of request(), with a handler of undici's
// own hooks (onConnect, onHeaders, onData, onComplete, onError): what wh's transport uses (since
// 3018301, src/adapters/post-handler.ts) and what the f60d674 build used, without the body stream
// and the promise request() makes per request. It is the floor of wh replay against autocannon.
// Usage: node bench/undici-loop.js FILE URL CONCURRENCY [ordered|unordered] [request|dispatch]
// (the secret is WH_SHARED_SECRET)
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent, request } from "undici";

const [file, url, concurrency = "64", order = "unordered", via = "request"] = process.argv.slice(2);
const agent = new Agent();
const target = new URL(url);
const secret = process.env.WH_SHARED_SECRET ?? "";
const lines = readFileSync(file, "utf8")
  .split("\n")
  .filter((line) => line !== "");
let next = 0;
let failed = 0;

async function post(event) {
  const body = JSON.stringify(event);
  const signature = createHmac("sha1", secret).update(body).digest("hex");
  const headers = { "content-type": "application/json", "x-signature": signature };
  const status = via === "request" ? await requested(headers, body) : await dispatched(headers, body);
  if (status >= 300) failed += 1;
}

async function requested(headers, body) {
  const response = await request(url, { method: "POST", headers, body });
  await response.body.dump();
  return response.statusCode;
}

/** The status, the answer's body read and dropped, through an Agent's dispatch(). */
function dispatched(headers, body) {
  return new Promise((resolve, reject) => {
    let status = 0;
    const handler = {
      onConnect() {},
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData: () => true,
      onComplete: () => resolve(status),
      onError: reject,
    };
    agent.dispatch({ origin: target.origin, path: target.pathname, method: "POST", headers, body }, handler);
  });
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
await agent.close();
if (failed > 0) {
  console.error(`${failed} of ${lines.length} posts were not answered 2xx`);
  process.exitCode = 1;
}
