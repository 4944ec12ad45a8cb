import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signBody } from "../../src/index.js";
import { APPS, expectRefusedEarly, type RunningApp, upload } from "./receiver-apps.js";

// The body limit in each real framework: past it the server stops reading and answers 413, so a
// client cannot make it hold (or even read) more than the limit. The client writes only as fast as
// the server reads: what it got to write before the answer is what the server took in, plus what
// the sockets' buffers hold (about 4 MB here).

const SECRET = "whsec-limits";
/** Far more than any limit here plus the sockets' buffers. */
const TOTAL = 256 * 1024 * 1024;
const signed = { "X-Signature": signBody(SECRET, "{}") };

describe.each(Object.keys(APPS))("the %s adapter's body limit", (name) => {
  let small: RunningApp;
  let large: RunningApp;
  beforeAll(async () => {
    const make = APPS[name] as (typeof APPS)[string];
    small = await make({ secret: SECRET, maxBytes: 1024 * 1024 });
    // A limit larger than the sockets' buffers: reading up to it would show in what the client wrote.
    large = await make({ secret: SECRET, maxBytes: 48 * 1024 * 1024 });
  });
  afterAll(async () => {
    await small?.close();
    await large?.close();
  });

  it("takes a signed body under the default limit of 5 MiB, over its framework's own default (Fastify's 1 MiB)", async () => {
    const app = await (APPS[name] as (typeof APPS)[string])({ secret: SECRET });
    try {
      const body = JSON.stringify({ type: "track", pad: "x".repeat(2 * 1024 * 1024) });
      const response = await fetch(app.url, { method: "POST", headers: { "Content-Type": "application/json", "X-Signature": signBody(SECRET, body) }, body });
      expect(response.status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it("answers a chunked body over the limit with 413 and stops reading it", async () => {
    expectRefusedEarly(await upload(small.url, TOTAL, signed, false), TOTAL / 4);
    expect(small.handled).toBe(0);
  });

  it("answers a declared Content-Length over the limit with 413 at once, before reading the body", async () => {
    expectRefusedEarly(await upload(large.url, TOTAL, signed, true), 16 * 1024 * 1024);
    expect(large.handled).toBe(0);
  });
});
