import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../src/core/bounded-map.js";

describe("BoundedMap", () => {
  it("keeps at most its limit, forgetting the first inserted", () => {
    const map = new BoundedMap<string, number>(3);
    for (const [index, key] of ["a", "b", "c", "d", "e"].entries()) map.set(key, index);
    expect([...map]).toEqual([
      ["c", 2],
      ["d", 3],
      ["e", 4],
    ]);
  });

  it("replaces a key's value in place: setting it again neither evicts nor makes it newer", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("a", 1).set("b", 2).set("a", 3);
    expect([...map]).toEqual([
      ["a", 3],
      ["b", 2],
    ]);
    map.set("c", 4);
    expect([...map.keys()]).toEqual(["b", "c"]);
  });
});
