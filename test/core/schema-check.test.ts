import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { custom, looseObject, nonEmptyString, nullish, number, oneOf, optional, string, withFastPath } from "../../src/core/schema-check.js";
import { CHECKED_SCHEMAS } from "../../src/core/message/schema.js";

/** Values of every kind, for every field: each is tried in place of each field of each message. */
const SAMPLES: unknown[] = [
  undefined,
  null,
  "",
  "x",
  "track",
  "page",
  0,
  -1,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  {},
  { a: 1 },
  [],
  ["x"],
  () => 1,
  new Date(0),
];

const FIXTURES = readFileSync(new URL("../../fixtures/events.ndjson", import.meta.url), "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line) as Record<string, unknown>);

const MESSAGES: Record<string, unknown>[] = [
  ...FIXTURES,
  {
    version: 1,
    type: "track",
    userId: "u1",
    event: "Order Completed",
    properties: {},
    context: { library: { name: "x" } },
    messageId: "m-1",
    timestamp: "2026-11-21T09:30:08.276Z",
  },
  { version: 1, type: "alias", "Previous ID": "a-1", "User ID": "u1", timestamp: "2026-11-21T09:30:08.276Z" },
  {
    type: "screen",
    userId: "u1",
    name: "Home",
    context: { device: { model: "Pixel", type: "android" }, os: { name: "Android", version: "15" }, app: { build: "7", name: "Shop", version: "2.1" } },
  },
  { path: "/pricing", referrer: "https://example.com/", title: "Pricing", url: "https://example.com/pricing", extra: 5 },
  { device: { model: "Pixel" }, os: {}, app: { name: "Shop" }, locale: "en" },
];

/** Every message with one field (top level, or one level down) replaced by each sample, or removed. */
function* variants(): Generator<unknown> {
  yield* [null, undefined, "track", 5, [], [{ type: "track" }], () => ({})];
  for (const message of MESSAGES) {
    yield message;
    const keys = new Set([...Object.keys(message), ...Object.values(CHECKED_SCHEMAS).flatMap(({ schema }) => Object.keys(schema.shape))]);
    for (const key of keys) {
      const { [key]: _removed, ...rest } = message;
      yield rest;
      for (const sample of SAMPLES) yield { ...message, [key]: sample };
      const inner = message[key];
      if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) {
        for (const innerKey of ["device", "os", "app", "model", "name", "path", "url"]) {
          for (const sample of SAMPLES) yield { ...message, [key]: { ...inner, [innerKey]: sample } };
        }
      }
    }
  }
}

describe("the message schemas' checks: each says yes to exactly what its zod schema accepts", () => {
  it.each(Object.entries(CHECKED_SCHEMAS))("agrees with zod's safeParse on every value tried, for %s", (_name, { schema, check }) => {
    let accepted = 0;
    let refused = 0;
    for (const value of variants()) {
      const success = schema.safeParse(value).success;
      expect({ value, accepted: check(value) }).toEqual({ value, accepted: success });
      if (success) accepted += 1;
      else refused += 1;
    }
    // Both answers are exercised, many times over.
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });

  // Each builder on its own, on every sample: what the message schemas do not reach (a number
  // where only strings are, a literal) is still held to zod's answer.
  it.each([
    ["string", string()],
    ["nonEmptyString", nonEmptyString()],
    ["number", number()],
    ["oneOf", oneOf(["track", "page"], { error: "no" })],
    ["custom", custom((value): value is object => typeof value === "object" && value !== null, { error: "no" })],
    ["optional", optional(number())],
    ["nullish", nullish(string())],
    ["looseObject", looseObject({ a: number(), b: optional(string()) })],
  ])("agrees with zod's safeParse on every sample, for %s", (_name, { schema, check }) => {
    for (const value of [...SAMPLES, { a: 1 }, { a: 1, b: "x", c: [] }, { a: Number.NaN }, { b: "x" }]) {
      expect({ value, accepted: check(value) }).toEqual({ value, accepted: schema.safeParse(value).success });
    }
  });
});

describe("withFastPath: zod's safeParse, with the check first", () => {
  const parse = withFastPath(CHECKED_SCHEMAS.inboundMessage);

  it("returns an accepted value itself, other keys and all", () => {
    const message = { type: "track", userId: "u1", event: "Signed Up", receivedAt: "2026-11-21T09:30:08.276Z" };
    const result = parse(message);
    expect(result.success).toBe(true);
    expect(result.data).toBe(message);
  });

  it("returns zod's own issues for a refused value", () => {
    const result = parse({ type: "track", userId: 5, messageId: "" });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.path.join("."))).toEqual(["userId", "messageId"]);
  });

  it("asks zod only when the check says no", () => {
    let parsed = 0;
    const schema = z.pipe(
      z.string(),
      z.transform((text) => {
        parsed += 1;
        return text;
      }),
    );
    const parseText = withFastPath({ schema, check: (value) => value === "fast" });
    expect(parseText("fast")).toEqual({ success: true, data: "fast" });
    expect(parsed).toBe(0);
    expect(parseText("slow")).toEqual({ success: true, data: "slow" });
    expect(parsed).toBe(1);
  });
});
