import { describe, expect, it } from "vitest";
import { diffMembership, diffTraitValues, toTraitName, type TraitChange } from "../../src/core/audience.js";

describe("toTraitName", () => {
  const cases: [name: string, expected: string][] = [
    ["High-Value Users (EU)", "high_value_users_eu"],
    ["  Big  Spenders  ", "big_spenders"],
    ["A--B__C", "a_b_c"],
    ["already_snake", "already_snake"],
    ["CamelCase", "camelcase"],
    ["Émigrés 2024!", "émigrés_2024"],
    ["café", "café"],
    ["!!!", ""],
    ["", ""],
    ["2024 Buyers", "2024_buyers"],
    ["Q3-2024", "q3_2024"],
    ["Lifetime Value", "lifetime_value"],
    ["__leading and trailing__", "leading_and_trailing"],
    ["tab\tand\nnewline", "tab_and_newline"],
    ["a.b/c:d", "a_b_c_d"],
    ["Ünïcödé Straße", "ünïcödé_straße"],
    ["users 😀 happy", "users_happy"],
    ["x", "x"],
    ["7", "7"],
  ];

  it.each(cases)("turns %j into %j", (name, expected) => {
    expect(toTraitName(name)).toBe(expected);
  });

  it("never leaves an underscore at either end or two in a row", () => {
    for (const [name] of cases) {
      const trait = toTraitName(name);
      expect(trait).not.toMatch(/^_|_$|__/);
    }
  });

  it("is idempotent", () => {
    for (const [name] of cases) expect(toTraitName(toTraitName(name))).toBe(toTraitName(name));
  });
});

describe("diffMembership", () => {
  it("makes every member join on the first sync", () => {
    const changes = diffMembership(new Set(["u1", "u2", "u3"]), new Set());
    expect(changes).toEqual<TraitChange[]>([
      { userId: "u1", value: true, change: "joined" },
      { userId: "u2", value: true, change: "joined" },
      { userId: "u3", value: true, change: "joined" },
    ]);
  });

  it("sends true for users who joined and false for users who left, joins first", () => {
    const changes = diffMembership(new Set(["u1", "u3", "u4"]), new Set(["u1", "u2", "u3", "u5"]));
    expect(changes).toEqual<TraitChange[]>([
      { userId: "u4", value: true, change: "joined" },
      { userId: "u2", value: false, change: "left" },
      { userId: "u5", value: false, change: "left" },
    ]);
  });

  it("returns nothing when membership has not changed", () => {
    expect(diffMembership(new Set(["u1", "u2"]), new Set(["u2", "u1"]))).toEqual([]);
  });

  it("makes everyone leave when the audience is empty", () => {
    expect(diffMembership(new Set(), new Set(["u1", "u2"]))).toEqual<TraitChange[]>([
      { userId: "u1", value: false, change: "left" },
      { userId: "u2", value: false, change: "left" },
    ]);
  });

  it("returns nothing for an empty audience that was empty", () => {
    expect(diffMembership(new Set(), new Set())).toEqual([]);
  });
});

describe("diffTraitValues", () => {
  it("sends every value on the first sync", () => {
    const values = new Map<string, unknown>([
      ["u1", 100],
      ["u2", "gold"],
    ]);
    expect(diffTraitValues(values, new Map())).toEqual<TraitChange[]>([
      { userId: "u1", value: 100, change: "new" },
      { userId: "u2", value: "gold", change: "new" },
    ]);
  });

  it("sends changed and new values and skips unchanged ones", () => {
    const values = new Map<string, unknown>([
      ["u1", 100],
      ["u2", 260],
      ["u3", true],
      ["u4", 7],
    ]);
    const known = new Map<string, unknown>([
      ["u1", 100],
      ["u2", 250],
      ["u3", true],
    ]);
    expect(diffTraitValues(values, known)).toEqual<TraitChange[]>([
      { userId: "u2", value: 260, change: "changed" },
      { userId: "u4", value: 7, change: "new" },
    ]);
  });

  it("compares values as JSON: equal objects and arrays are unchanged, a different type is a change", () => {
    const values = new Map<string, unknown>([
      ["obj", { tier: "gold", since: 2020 }],
      ["list", [1, 2, 3]],
      ["text", "100"],
      ["nil", null],
      ["flag", false],
    ]);
    const known = new Map<string, unknown>([
      ["obj", { tier: "gold", since: 2020 }],
      ["list", [1, 2, 3]],
      ["text", 100],
      ["nil", null],
      ["flag", 0],
    ]);
    expect(diffTraitValues(values, known)).toEqual<TraitChange[]>([
      { userId: "text", value: "100", change: "changed" },
      { userId: "flag", value: false, change: "changed" },
    ]);
  });

  it("leaves users missing from the values alone", () => {
    const values = new Map<string, unknown>([["u1", 1]]);
    const known = new Map<string, unknown>([
      ["u1", 1],
      ["u2", 2],
    ]);
    expect(diffTraitValues(values, known)).toEqual([]);
  });

  it("treats a known null as a value, so a new non-null value is a change", () => {
    const values = new Map<string, unknown>([["u1", 5]]);
    const known = new Map<string, unknown>([["u1", null]]);
    expect(diffTraitValues(values, known)).toEqual<TraitChange[]>([{ userId: "u1", value: 5, change: "changed" }]);
  });
});
