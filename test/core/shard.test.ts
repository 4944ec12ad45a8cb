import { describe, expect, it } from "vitest";
import { fnv1a32 } from "../../src/core/hash.js";
import { parseShard, shardOfKey, shardOfLine } from "../../src/core/shard.js";

// Known answers: a shard is where n machines agree to send a user's events, so the hash may
// never change between versions. FNV-1a 32 of "", "a" and "foobar" are the published vectors;
// the rest were computed independently (FNV-1a over UTF-16 code units, in Python).

describe("fnv1a32", () => {
  it.each([
    ["", 0x811c9dc5],
    ["a", 0xe40c292c],
    ["foobar", 0xbf9cf968],
    ["user-1", 0xf5537974],
    ["user-42", 0x026073ab],
    ["é", 0x6c0b6c44],
    ["😀", 0xcb31c4b8],
  ])("hashes %j to its known value", (text, expected) => {
    expect(fnv1a32(text)).toBe(expected);
  });
});

describe("shardOfKey", () => {
  it.each([
    ["user-1", 2, 0],
    ["user-1", 7, 3],
    ["user-42", 4, 3],
    ["user-42", 16, 11],
    ["anon-7", 3, 1],
    ["alice@example.com", 3, 2],
    ["alice@example.com", 7, 3],
    ["😀", 3, 2],
  ])("puts %j, with n = %i, in shard %i", (key, count, expected) => {
    expect(shardOfKey(key, count)).toBe(expected);
  });
});

describe("shardOfLine", () => {
  const line = (fields: Record<string, unknown>): string => JSON.stringify({ type: "track", event: "E", ...fields });

  it("goes by userId, before anonymousId", () => {
    expect(shardOfLine(line({ userId: "user-42", anonymousId: "anon-7" }), 1, 4)).toBe(3);
  });

  it("goes by anonymousId when there is no userId, or it is empty", () => {
    expect(shardOfLine(line({ anonymousId: "anon-7" }), 1, 16)).toBe(3);
    expect(shardOfLine(line({ userId: "", anonymousId: "anon-7" }), 1, 16)).toBe(3);
  });

  it('goes by an outbound alias\'s "User ID", before anonymousId', () => {
    expect(shardOfLine(JSON.stringify({ version: 1, type: "alias", "Previous ID": "old", "User ID": "alice@example.com" }), 1, 7)).toBe(3);
    expect(shardOfLine(JSON.stringify({ version: 1, type: "alias", "Previous ID": "old", "User ID": "alice@example.com", anonymousId: "anon-7" }), 1, 3)).toBe(
      2,
    );
  });

  it("puts a line with no user key (no identity, or not JSON) in shard (line number - 1) mod n", () => {
    expect(shardOfLine(line({}), 6, 4)).toBe(1);
    expect(shardOfLine("not json", 7, 4)).toBe(2);
    expect(shardOfLine("[1, 2]", 4, 4)).toBe(3);
  });
});

describe("parseShard", () => {
  it.each([
    ["0/4", { index: 0, count: 4 }],
    [" 3 / 4 ", { index: 3, count: 4 }],
    ["0/1", { index: 0, count: 1 }],
  ])("reads %j", (text, expected) => {
    expect(parseShard(text)).toEqual(expected);
  });

  it.each(["4/4", "1/0", "-1/4", "1", "a/b", "1/4/2", ""])("refuses %j", (text) => {
    expect(parseShard(text)).toBeUndefined();
  });
});
