import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GOLDEN } from "./sdk-requests.js";

/** The shared fixtures, where the repository sits beside them (the project's own machines). */
const SHARED = fileURLToPath(new URL("../../../../shared/fixtures/sdk-requests/", import.meta.url));

describe.skipIf(!existsSync(SHARED))("the copies of the captured SDK requests", () => {
  it("are byte for byte the shared originals, every file of them", () => {
    const originals = readdirSync(SHARED).sort();
    expect(readdirSync(fileURLToPath(GOLDEN)).sort()).toEqual(originals);
    for (const name of originals) expect(readFileSync(new URL(name, GOLDEN)).equals(readFileSync(`${SHARED}${name}`)), name).toBe(true);
  });
});
