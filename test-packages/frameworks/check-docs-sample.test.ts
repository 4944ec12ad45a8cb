import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import express from "express";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { removeTempDirs } from "../../test/helpers/run-wh.js";
import { check, closeReceivers, expectReserialisationAdvisory, listening, outcomes, type Receiver, SECRET } from "../../test/cli/commands/check-receivers.js";

// wh check against the receiver of segment-docs' Webhooks destination page, an Express app as
// the page writes it: every required case passes, with one advisory.

afterEach(closeReceivers);
afterAll(removeTempDirs);

/**
 * The sample of segment-docs' Webhooks destination page (src/connections/destinations/catalog/
 * webhooks/index.md, "Authentication"): express.json() parses the body, then the HMAC-SHA1 of
 * JSON.stringify(req.body) is compared with X-Signature.
 */
function segmentDocsSample(): Promise<Receiver> {
  let count = 0;
  const app = express();
  app.post("/hook", express.json(), (request, response) => {
    count += 1;
    const digest = createHmac("sha1", SECRET)
      .update(Buffer.from(JSON.stringify(request.body), "utf-8"))
      .digest("hex");
    if (request.headers["x-signature"] === digest) response.send("ok");
    else response.status(401).send("bad signature");
  });
  return listening(createServer(app), () => count);
}

describe("wh check: segment-docs' sample receiver (express.json(), then JSON.stringify(req.body))", () => {
  it("passes every required case, exit 0, with the advisory that it verifies a re-serialisation", async () => {
    const result = await check(await segmentDocsSample(), ["--json"]);
    expect(result.code, result.stdout).toBe(0);
    const by = outcomes(result.stdout);
    expect(by.fail).toBeUndefined();
    expect(by.warn).toEqual(["unicode-escaped"]);
    expectReserialisationAdvisory(result.stdout);
  });

  it("on a terminal: the advisory, then every required case passed", async () => {
    const result = await check(await segmentDocsSample());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/✔ pass {2}unicode +HTTP 200/);
    expect(result.stdout).toMatch(/! warn {2}unicode-escaped +HTTP 401 .*\(advisory\)/);
    expect(result.stdout).toContain("16 passed, 0 failed, 1 advisory warning, 1 skipped");
    expect(result.stdout).toContain("✔ every required case passed");
  });
});
