import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readSpoolDeadLetters, removeSpoolDeadLetters } from "../../../src/adapters/spool/dead-letters.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-dead-letters-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const letter = (messageId: string): string =>
  JSON.stringify({ line: 7, outcome: "failed", reason: "HTTP 500", at: "2026-11-21T09:30:09.000Z", original: JSON.stringify({ type: "track", messageId }) });

describe("the spool's dead-letter files", () => {
  it("reads each file's whole lines with their source and line; a last line still being written is not one yet", () => {
    writeFileSync(join(dir, "dead-letters.ndjson"), `${letter("m1")}\n\n${letter("m2")}\n{"line":`);
    writeFileSync(join(dir, "dead-letters.a_b.ndjson"), `${letter("m3")}\n`);
    writeFileSync(join(dir, "dead-letters.ndjson.123.tmp"), `${letter("m4")}\n`);
    const letters = [...readSpoolDeadLetters(dir, ["a b"])];
    expect(letters.map(({ file, fileLine, source }) => [file, fileLine, source])).toEqual([
      ["dead-letters.a_b.ndjson", 1, "a b"],
      ["dead-letters.ndjson", 1, null],
      ["dead-letters.ndjson", 3, null],
    ]);
    expect([...readSpoolDeadLetters(dir, [])][0]?.source).toBe("a_b");
  });

  it("takes out only the lines named, keeps the rest byte for byte, and removes a file left empty", () => {
    writeFileSync(join(dir, "dead-letters.ndjson"), `${letter("m1")}\n${letter("m2")}\n{"line":`);
    writeFileSync(join(dir, "dead-letters.web.ndjson"), `${letter("m3")}\n`);
    const letters = [...readSpoolDeadLetters(dir, [])];
    removeSpoolDeadLetters(dir, new Set([letters[0]?.id as string, letters[2]?.id as string]));
    expect(readFileSync(join(dir, "dead-letters.ndjson"), "utf8")).toBe(`${letter("m2")}\n{"line":`);
    expect(existsSync(join(dir, "dead-letters.web.ndjson"))).toBe(false);
    expect([...readSpoolDeadLetters(dir, [])].map((left) => left.id)).toEqual([letters[1]?.id]);
  });
});
