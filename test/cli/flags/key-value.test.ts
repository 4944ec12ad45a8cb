import { describe, expect, it } from "vitest";
import { assignKeyValues, parseJsonObjectFlag } from "../../../src/cli/flags/key-value.js";
import { UsageError } from "../../../src/core/errors.js";

function usageErrorOf(run: () => unknown): UsageError {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("expected a UsageError");
}

describe("assignKeyValues", () => {
  it("nests dotted keys", () => {
    expect(assignKeyValues("--prop", ["cart.total=12.5", "cart.items=2", "plan=pro"])).toEqual({ cart: { total: 12.5, items: 2 }, plan: "pro" });
  });

  it("parses JSON values", () => {
    expect(assignKeyValues("--prop", ["n=12.5", "yes=true", "none=null", 'obj={"a":1}', "list=[1,2]", 's="007"'])).toEqual({
      n: 12.5,
      yes: true,
      none: null,
      obj: { a: 1 },
      list: [1, 2],
      s: "007",
    });
  });

  it("keeps plain text as a string", () => {
    expect(assignKeyValues("--trait", ["name=Ada Lovelace", "zip=007", "empty=", "eq=a=b"])).toEqual({
      name: "Ada Lovelace",
      zip: "007",
      empty: "",
      eq: "a=b",
    });
  });

  it("adds to the target it is given and returns it", () => {
    const target: Record<string, unknown> = { a: { keep: 1 } };
    expect(assignKeyValues("--context", ["a.b=2"], target)).toBe(target);
    expect(target).toEqual({ a: { keep: 1, b: 2 } });
  });

  it.each([
    [["a=1", "a.b=2"], '--prop "a.b=2" conflicts with --prop "a=1": one would overwrite the other'],
    [["a.b=2", "a=1"], '--prop "a=1" conflicts with --prop "a.b=2": one would overwrite the other'],
    [["a=1", "a=2"], '--prop "a=2" conflicts with --prop "a=1": one would overwrite the other'],
    [['a={"b":1}', "a.b=2"], '--prop "a.b=2" conflicts with --prop "a={\\"b\\":1}": one would overwrite the other'],
  ])("refuses pairs %j that would overwrite each other", (pairs, message) => {
    expect(usageErrorOf(() => assignKeyValues("--prop", pairs)).message).toBe(message);
  });

  it("adds a dotted key to an object an earlier pair gave as JSON", () => {
    expect(assignKeyValues("--prop", ['a={"b":1}', "a.c=2", "x.y=1", "x.z=2"])).toEqual({ a: { b: 1, c: 2 }, x: { y: 1, z: 2 } });
  });

  it("replaces what the target held before (--data's), even a value a dotted key goes through", () => {
    expect(assignKeyValues("--prop", ["a.b=2", "c=3"], { a: 1, c: { d: 4 } })).toEqual({ a: { b: 2 }, c: 3 });
  });

  it.each(["total", "=12"])("refuses %j without a key before '='", (pair) => {
    const error = usageErrorOf(() => assignKeyValues("--prop", [pair]));
    expect(error.message).toBe(`--prop ${JSON.stringify(pair)}: expected key=value`);
    expect(error.code).toBe("E_USAGE");
    expect(error.exitCode).toBe(2);
  });

  it.each(["__proto__=1", "__proto__.polluted=1", "a.__proto__.polluted=1", "constructor.prototype.x=1", "a..b=1", "a.=1"])("refuses the key of %j", (pair) => {
    expect(usageErrorOf(() => assignKeyValues("--prop", [pair])).message).toBe(`--prop ${JSON.stringify(pair)}: invalid key`);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("parseJsonObjectFlag", () => {
  it("parses a JSON object", () => {
    expect(parseJsonObjectFlag("--integrations", '{"All":false,"Webhooks":true}')).toEqual({ All: false, Webhooks: true });
  });

  it("refuses text that is not JSON", () => {
    expect(usageErrorOf(() => parseJsonObjectFlag("--integrations", "{All:false}")).message).toMatch(/^--integrations: invalid JSON: /);
  });

  it.each(["[1]", "null", "5", '"x"'])("refuses %s as not an object", (text) => {
    expect(usageErrorOf(() => parseJsonObjectFlag("--integrations", text)).message).toBe("--integrations: expected a JSON object");
  });
});
