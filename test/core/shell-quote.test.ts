import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellQuote, singleQuoted } from "../../src/core/shell-quote.js";
import { shellWords } from "../helpers/shell-words.js";

const HOSTILE = ["it's", "'", "a b", "$(touch q-1)", "`touch q-2`", ";touch q-3", "line\nbreak", "\\'$HOME\\", "", "--url=x", "plain"];
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-quote-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the shell quoters", () => {
  it("give sh back each word as it was, and run nothing from it", async () => {
    for (const quote of [singleQuoted, shellQuote]) {
      expect(await shellWords(`curl ${HOSTILE.map(quote).join(" ")}`, dir)).toEqual(["curl", ...HOSTILE]);
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("leave a word bare only when nothing in it is syntax (shellQuote), and always quote (singleQuoted)", () => {
    expect(shellQuote("https://user@example.com:8080/hook,a=%20")).toBe("https://user@example.com:8080/hook,a=%20");
    expect(shellQuote("/hook?a=1")).toBe("'/hook?a=1'");
    expect(shellQuote("a&b")).toBe("'a&b'");
    expect(shellQuote("")).toBe("''");
    expect(singleQuoted("track")).toBe("'track'");
  });
});
