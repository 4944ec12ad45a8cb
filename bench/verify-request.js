// verifyRequest (the library's receiver check) beside the bare work it cannot avoid: HMAC-SHA1 of
// the body and one JSON.parse of it, in the same loop shape. Two bodies: one event (~320 bytes,
// signed whole), and an Actions batch of 100 events (~32 KB, signed over its first event as
// Segment signs batches: the HMAC of the whole body is computed first, to learn it is no single
// event). Rounds alternate the two, so the machine's load hits both alike; medians and ranges of
// µs per call. Needs `npm run build` first (it imports dist/index.js).
import { createHmac } from "node:crypto";
import { signBody, verifyRequest } from "../dist/index.js";

const ROUNDS = Number(process.env.BENCH_VERIFY_ROUNDS ?? 31);
const SECRET = "bench-secret";

const event = (index) => ({
  type: "track",
  event: "Order Completed",
  userId: `user-${index}`,
  messageId: `0b7c4e8a-6c2e-4f7e-9a51-${String(index).padStart(12, "0")}`,
  timestamp: "2026-11-21T10:30:08.000Z",
  properties: { orderId: `o-${index}`, total: 99.5, currency: "EUR", products: [{ sku: "sku-1", price: 49.75, quantity: 2 }] },
  context: { ip: "203.0.113.7", library: { name: "analytics.js", version: "5.2.0" } },
});
const single = JSON.stringify(event(0));
const events = Array.from({ length: 100 }, (_, index) => event(index));
const batch = JSON.stringify(events);
const cases = [
  ["one event", Buffer.from(single), signBody(SECRET, single), false],
  ["batch of 100", Buffer.from(batch), signBody(SECRET, JSON.stringify(events[0])), true],
];

/** The floor: what any receiver must do with these bytes. */
function bare(raw, signature) {
  const ok = createHmac("sha1", SECRET).update(raw).digest("hex") === signature;
  return [ok, JSON.parse(raw.toString("utf8"))];
}

function perCall(fn, iterations) {
  const started = process.hrtime.bigint();
  for (let index = 0; index < iterations; index += 1) fn();
  return Number(process.hrtime.bigint() - started) / 1000 / iterations;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values, digits = 1) => `[${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`;

console.log(`Node ${process.version}, µs per call, medians of ${ROUNDS} interleaved rounds [min–max]`);
for (const [label, raw, signature, batches] of cases) {
  const headers = { "x-signature": signature, "content-type": "application/json" };
  const verdict = verifyRequest({ body: raw, headers, secret: SECRET, batches });
  if (!verdict.ok) throw new Error(`${label}: ${verdict.reason}`);
  const iterations = Math.max(200, Math.round(2_000_000 / raw.length));
  const times = { wh: [], bare: [], ratio: [] };
  // Warm both up first: the first rounds measure V8's compilers, not the code.
  for (let round = -3; round < ROUNDS; round += 1) {
    const wh = perCall(() => verifyRequest({ body: raw, headers, secret: SECRET, batches }), iterations);
    const floor = perCall(() => bare(raw, signature), iterations);
    if (round < 0) continue;
    times.wh.push(wh);
    times.bare.push(floor);
    times.ratio.push(wh / floor);
  }
  console.log(
    `  ${`${label} (${raw.length} bytes):`.padEnd(30)} verifyRequest ${median(times.wh).toFixed(1)} ${range(times.wh)}, ` +
      `bare HMAC + JSON.parse ${median(times.bare).toFixed(1)} ${range(times.bare)}, ratio ${median(times.ratio).toFixed(2)} ${range(times.ratio, 2)} (target <= ${batches ? 1.5 : "~1"})`,
  );
}
