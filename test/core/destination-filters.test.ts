import tsub from "@segment/tsub";
import { describe, expect, it } from "vitest";
import { buildEventFilter, type FilterConfig } from "../../src/core/destination/filters.js";
import { compileFql } from "../../src/core/destination/fql.js";
import { keptBySample } from "../../src/core/destination/sample.js";
import { parseFilters } from "../../src/config/schema.js";

const engine = { matches: tsub.matches, transform: tsub.transform };
const irOf = (text: string): unknown => {
  const compiled = compileFql(text);
  if (!compiled.ok) throw new Error(compiled.error);
  return compiled.ir;
};

// The FQL each IR stands for, as tsub-js's own tests pair them (segmentio/tsub-js src/__tests__/matchers.test.ts, the `// FQL:` comments).
const TSUB_VECTORS: [fql: string, ir: string][] = [
  ["true", '{"value":true}'],
  ["false", '{"value":false}'],
  ['match("test@test.com", "*.com")', '["match", {"value": "test@test.com"}, {"value": "*.com"}]'],
  ['contains(email, ".com")', '["contains", "email", {"value": ".com"}]'],
  ['"test" = lowercase("TEST")', '["=", {"value": "test"}, ["lowercase", {"value": "TEST"}]]'],
  ['4 = length("TEST")', '["=", {"value": 4}, ["length", {"value": "TEST"}]]'],
  ['"boolean" = typeof(true)', '["=", {"value": "boolean"}, ["typeof", {"value": true}]]'],
  ["[] = []", '["=",{"value":[]},{"value":[]}]'],
  ["[1] = [1]", '["=",{"value":[{"value":1}]},{"value":[{"value":1}]}]'],
  ["[1, 2] = [2, 1]", '["=",{"value":[{"value":1}, {"value":2}]},{"value":[{"value":2}, {"value":1}]}]'],
  ["0 = 0", '["=",{"value":0},{"value":0}]'],
  ["5 != 6", '["!=",{"value":5},{"value":6}]'],
  ["5 <= 6", '["<=",{"value":5},{"value":6}]'],
  ["5 >= 6", '[">=",{"value":5},{"value":6}]'],
  ["5 < 6", '["<",{"value":5},{"value":6}]'],
  ["7 > 6", '[">",{"value":7},{"value":6}]'],
  ["true and true and false", '["and",{"value":true},{"value":true},{"value":false}]'],
  ["false or false or true", '["or",{"value":false},{"value":false},{"value":true}]'],
  ['"event" in ["event", "str"]', '["in", {"value": "event"}, {"value": [{"value": "event"}, {"value": "str"}]}]'],
  ['event in ["Clicked", "Viewed"]', '["in", "event", {"value": [{"value": "Clicked"}, {"value": "Viewed"}]}]'],
  ["(false or true) and true", '["and",["or",{"value":false},{"value":true}],{"value":true}]'],
];

// segment-docs src/api/public-api/fql.md, "Examples" and "Escaping Field Paths", on its own event.
const DOC_EVENT = {
  event: "Button Clicked",
  type: "track",
  context: { library: { name: "analytics.js", version: "1.0" } },
  properties: { "product 1": { price: "19.99" } },
};
const DOC_EXAMPLES: [fql: string, result: boolean][] = [
  ["event = 'Button Clicked'", true],
  ["event = 'Screen Tapped'", false],
  ["context.path.path = '/login'", false],
  ["type = 'identify' or type = 'track'", true],
  ["event = 'Button Clicked' and type = 'track'", true],
  ["match( context.library.version, '1.*' )", true],
  ["match( context.library.version, '2.*' )", false],
  ["type = 'track' and ( event = 'Click' or match( event, 'Button *' ) )", true],
  ["!contains( context.library.name, 'js' )", false],
  ["!( type in ['track', 'identify'] )", false],
  ["properties.product\\ 1.price = '19.99'", true],
];

describe("FQL compiled to tsub's IR", () => {
  it.each(TSUB_VECTORS)("compiles %s to the IR tsub-js's tests pair with it", (fql, ir) => {
    expect(irOf(fql)).toEqual(JSON.parse(ir));
  });

  it.each(DOC_EXAMPLES)("%s is %s under tsub's matches, as segment-docs' FQL page says", (fql, result) => {
    expect(tsub.matches(DOC_EVENT, { type: "fql", ir: JSON.stringify(irOf(fql)) })).toBe(result);
  });

  it.each([
    ['userId = oops"', "the string at column 14 is not closed"],
    ["uppercase(event) = 'A'", "uppercase() is not a function @segment/tsub evaluates"],
    ["type = ", "an operand is missing at the end"],
    ["type = 'track' track", 'unexpected "track" at column 16'],
    ["properties.a\\.b = 1", "a field name with a dot in it cannot be matched"],
    ["contains(event)", "contains() takes 2 arguments, not 1"],
  ])("refuses %s, saying where", (fql, error) => {
    const compiled = compileFql(fql);
    expect(compiled.ok).toBe(false);
    expect(compiled.ok ? "" : compiled.error).toContain(error);
  });
});

const track = (userId: string, properties: Record<string, unknown> = {}) => ({
  type: "track",
  event: "Order Completed",
  userId,
  messageId: `m-${userId}`,
  properties: { plan: "pro", email: "a@example.com", price: 5, ...properties },
  context: { ip: "203.0.113.9", page: { path: "/checkout", title: "Checkout" } },
});

describe("destination filters against @segment/tsub on the same events", () => {
  it("drops what tsub drops, naming the filter", () => {
    const filter = buildEventFilter([{ if: "properties.plan = 'free'", actions: [{ type: "DROP" }], title: "No free plans" }], engine);
    expect(filter?.(track("u1", { plan: "free" }))).toEqual({ dropped: true, title: "No free plans" });
    expect(filter?.(track("u2"))).toMatchObject({ dropped: false, changed: false });
    expect(tsub.transform(track("u1", { plan: "free" }), [{ type: "drop" }])).toBeNull();
  });

  it("cuts properties exactly as tsub's allow_properties and drop_properties do, leaving the caller's event whole", () => {
    const fields = { allow: { properties: ["plan", "price"], "context.page": ["path"] }, drop: { context: ["ip"] } };
    const filters: FilterConfig[] = [
      { if: "all", actions: [{ type: "ALLOW_PROPERTIES", fields: fields.allow }] },
      { if: "type = 'track'", actions: [{ type: "drop_properties", fields: fields.drop }] },
    ];
    const event = track("u1");
    const decision = buildEventFilter(filters, engine)?.(event);
    // Segment's order: drop properties, then allow properties.
    const expected = tsub.transform(track("u1"), [
      { type: "drop_properties", config: { drop: fields.drop } },
      { type: "allow_properties", config: { allow: fields.allow } },
    ]);
    expect(decision).toEqual({ dropped: false, event: expected, changed: true });
    expect(event).toEqual(track("u1"));
  });

  it("evaluates every filter's `if` on the event as it came", () => {
    const filters: FilterConfig[] = [
      { if: "all", actions: [{ type: "DROP_PROPERTIES", fields: { properties: ["plan"] } }], title: "no plan" },
      { if: "properties.plan = 'pro'", actions: [{ type: "ALLOW_PROPERTIES", fields: { properties: ["price"] } }], title: "pro: price only" },
    ];
    const decision = buildEventFilter(filters, engine)?.(track("u1"));
    expect(decision).toMatchObject({ dropped: false, event: { properties: { price: 5 } } });
  });

  it('takes `if: "all"` as segment-docs\' own Public API example writes it: every event, its userId dropped', () => {
    // segment-docs src/connections/destinations/destination-filters.md, "Remove userId from payload", as pasted.
    const documented = {
      sourceId: "<sourceId>",
      destinationId: "<destinationId>",
      title: "Don't send userId at all",
      description: "Drop userId on all requests",
      if: "all",
      actions: [{ type: "DROP_PROPERTIES", fields: { "": ["userId"] } }],
      enabled: true,
    };
    const checked = parseFilters([documented]);
    expect(checked.ok).toBe(true);
    const filter = buildEventFilter(checked.ok ? checked.value : [], engine);
    const identify = { type: "identify", userId: "u2", traits: { plan: "pro" } };
    for (const event of [track("u1"), identify]) {
      const { userId: _dropped, ...rest } = event;
      expect(filter?.(event)).toEqual({ dropped: false, event: rest, changed: true });
    }
  });

  it("skips a disabled filter, and is nothing when no filter is enabled", () => {
    const drop: FilterConfig = { if: "all", actions: [{ type: "drop" }], enabled: false };
    expect(buildEventFilter([drop], engine)).toBeUndefined();
  });

  it("samples on the percent alone with tsub's own transform: 0 drops everything, 1 keeps everything", () => {
    const none = buildEventFilter([{ if: "all", actions: [{ type: "SAMPLE", percent: 0 }] }], engine);
    const all = buildEventFilter([{ if: "all", actions: [{ type: "sample_event", percent: 1 }] }], engine);
    expect(none?.(track("u1"))).toMatchObject({ dropped: true });
    expect(all?.(track("u1"))).toMatchObject({ dropped: false });
  });
});

describe("a sample on a field (keptBySample)", () => {
  const users = Array.from({ length: 2_000 }, (_, index) => `user-${index}`);
  // tsub's own sampling tests (transformers.test.ts, sample_event) hold these properties; its code cannot be the oracle (see the last test).
  it.each([0.1, 0.5, 0.9])("keeps about %s of the users, the same ones every time", (percent) => {
    const kept = users.filter((userId) => keptBySample(userId, percent));
    expect(kept.length / users.length).toBeCloseTo(percent, 1);
    expect(users.filter((userId) => keptBySample(userId, percent))).toEqual(kept);
  });

  it("keeps what a smaller percent keeps", () => {
    for (const userId of users.slice(0, 200)) if (keptBySample(userId, 0.3)) expect(keptBySample(userId, 0.6)).toBe(true);
  });

  it("is needed: @segment/tsub 2.0.1 as installed keeps every event of a 10% sample on a field", () => {
    const sample = { type: "sample_event", config: { sample: { percent: 0.1, path: "userId" } } };
    expect(users.filter((userId) => tsub.transform({ userId }, [sample]) !== null).length).toBe(users.length);
  });
});
