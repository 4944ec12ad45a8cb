import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSegmentEngines } from "../../src/adapters/segment-engines.js";
import { compileSubscriptions, type SubscriptionConfig } from "../../src/core/destination/subscriptions.js";
import { FIXTURES } from "../helpers/run-wh.js";

// Segment's own vectors (fixtures/segment-vectors, read as data): every trigger its FQL tests
// parse is a trigger wh takes and matches as destination-subscriptions does; every mapping its
// mapping-kit fixtures call valid is a mapping wh takes, and every invalid one is refused with
// mapping-kit's own message, naming the subscription and the field.

const VECTORS = join(FIXTURES, "segment-vectors");
const engines = loadSegmentEngines();
const fql = createRequire(import.meta.url)("@segment/destination-subscriptions") as {
  parseFql(text: string): unknown;
  validate(ast: unknown, event: unknown): boolean;
};
const triggers = JSON.parse(readFileSync(join(VECTORS, "fql-triggers.json"), "utf8")) as { valid: string[]; invalid: string[] };

const subscription = (overrides: Partial<SubscriptionConfig>): SubscriptionConfig => ({
  name: "Vector",
  actionSlug: "send",
  enabled: true,
  trigger: 'type = "track"',
  settings: { url: "http://127.0.0.1:9/hook" },
  ...overrides,
});

/** Events that tell the vectors' conditions apart. */
const EVENTS = [
  {
    type: "track",
    event: "Product Added",
    userId: "u",
    properties: { price: 150, premium: "true", name: "Nike Air X", foo: { bar: "baz" } },
    context: { foo: "bar" },
  },
  { type: "track", event: "Order Completed", properties: { price: 5, name: "X shoe" } },
  { type: "identify", event: "identify", traits: { logins: 120, plan: "premium", test: true, name: "Nike", age: 51 } },
  { type: "page", name: "Home", properties: {} },
  { type: "track", event: "Signed Up", traits: { age: 50, test: "true" }, properties: { name: null } },
];

describe("FQL triggers: destination-subscriptions' own test vectors", () => {
  it.each(triggers.valid)("takes %s and matches as Segment does", (trigger) => {
    const compiled = compileSubscriptions([subscription({ trigger })], engines);
    expect(compiled.ok).toBe(true);
    const matches = compiled.ok ? compiled.value[0]?.matches : undefined;
    for (const event of EVENTS) expect(matches?.(event), `${trigger} on ${JSON.stringify(event)}`).toBe(fql.validate(fql.parseFql(trigger), event));
  });

  it.each(triggers.invalid)("refuses %s, naming the subscription and its trigger", (trigger) => {
    const compiled = compileSubscriptions([subscription({ trigger })], engines);
    expect(compiled.ok ? [] : compiled.issues).toEqual([expect.stringMatching(/^subscriptions\[0\] \("Vector"\)\.trigger: not valid FQL \(/)]);
  });
});

describe("mappings: mapping-kit's own schema fixtures", () => {
  const fixtures = (kind: string) =>
    readdirSync(join(VECTORS, "mapping-kit", kind)).map((file) => [file, JSON.parse(readFileSync(join(VECTORS, "mapping-kit", kind, file), "utf8"))] as const);

  it.each(fixtures("valid"))("takes %s", (_file, { mapping }) => {
    const compiled = compileSubscriptions([subscription({ settings: { url: "http://127.0.0.1:9/hook", data: mapping } })], engines);
    expect(compiled.ok ? [] : compiled.issues).toEqual([]);
  });

  it.each(fixtures("invalid"))("refuses %s with mapping-kit's message", (_file, { mapping, expectError }) => {
    const compiled = compileSubscriptions([subscription({ settings: { url: "http://127.0.0.1:9/hook", data: mapping } })], engines);
    // mapping-kit names the place from the mapping's root: here the mapping is the data field's.
    const expected = (Array.isArray(expectError) ? expectError : [expectError]).map(
      (message: string) => `subscriptions[0] ("Vector").settings: /data${message.startsWith("/ ") ? message.slice(1) : message}`,
    );
    expect(compiled.ok ? [] : compiled.issues).toEqual(expected);
  });
});
