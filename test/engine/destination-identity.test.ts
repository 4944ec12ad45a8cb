import { describe, expect, it } from "vitest";
import type { Destination } from "../../src/config/resolve.js";
import { destinationIdentity } from "../../src/engine/destination-identity.js";

/** A classic destination of one URL with these headers (and a secret, which is never part of its identity). */
function destination(headers: Record<string, string>, sharedSecret = "s3cret"): Destination {
  return {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: [{ url: new URL("https://hooks.example.com/in"), headers }],
    sharedSecret,
    secretOrigin: undefined,
    scheme: "segment",
    mode: "classic",
    method: "POST",
    batchSize: 1,
    timeoutMs: 10_000,
  };
}

describe("destinationIdentity", () => {
  const original = destinationIdentity(destination({ "X-Tenant": "acme", Authorization: "Bearer t0k" }));

  it.each([
    ["another value of a header", { "X-Tenant": "globex", Authorization: "Bearer t0k" }],
    ["a header left out", { Authorization: "Bearer t0k" }],
    ["a header added", { "X-Tenant": "acme", Authorization: "Bearer t0k", "X-Region": "eu" }],
  ])("has another fingerprint with %s: a resume there is refused", (_label, headers) => {
    expect(destinationIdentity(destination(headers)).fingerprint).not.toBe(original.fingerprint);
  });

  it("has the same fingerprint whatever the order of the headers or the shared secret", () => {
    expect(destinationIdentity(destination({ Authorization: "Bearer t0k", "X-Tenant": "acme" }, "other")).fingerprint).toBe(original.fingerprint);
  });

  it("keeps header values out of what it shows, a digest of each standing for it", () => {
    expect(original.description).toBe("https://hooks.example.com/in");
    expect(Object.keys(original.parts)).toEqual(["the URL https://hooks.example.com/in", "header X-Tenant", "header Authorization"]);
    expect(JSON.stringify(original)).not.toMatch(/acme|t0k/);
  });
});
