import { describe, expect, it } from "vitest";
import type { WhConfig } from "../../../src/config/schema.js";
import { CONFIG_KEY_FLAGS, type ConfigKeyFlags } from "../../../src/cli/flags/config-keys.js";
import { checkFlags } from "../../../src/cli/flags/check-tables.js";
import { deadLettersReplayFlags, listenFlags, serveFlags } from "../../../src/cli/flags/server-tables.js";
import type { Flag } from "../../../src/cli/flags/spec.js";
import * as tables from "../../../src/cli/flags/tables.js";

// The compile-time half runs in `npm run typecheck` (tsconfig.json includes test/): these lines
// fail to compile unless the map covers every key of the config, and only those.
const coversConfig = (map: ConfigKeyFlags<WhConfig>) => map;
const coversConfigWithANewKey = (map: ConfigKeyFlags<WhConfig & { aNewKey?: string }>) => map;

describe("every config key has a flag or says file only", () => {
  it("compiles for the config as it is, and not for a config with a key the map does not name", () => {
    expect(coversConfig(CONFIG_KEY_FLAGS)).toBe(CONFIG_KEY_FLAGS);
    // @ts-expect-error a config key with neither a flag nor "file only" (aNewKey) does not compile
    expect(coversConfigWithANewKey(CONFIG_KEY_FLAGS)).toBe(CONFIG_KEY_FLAGS);
    // Nor does a key the config does not have.
    // @ts-expect-error aKeyTheConfigLacks is not a key of the config
    const withAKeyTheConfigLacks = { ...CONFIG_KEY_FLAGS, aKeyTheConfigLacks: "file only" } satisfies ConfigKeyFlags;
    expect(withAKeyTheConfigLacks.aKeyTheConfigLacks).toBe("file only");
  });

  it("lists each flag that declares a config key under that key", () => {
    const everyTable = [...Object.values(tables), checkFlags, listenFlags, serveFlags, deadLettersReplayFlags];
    const flags = everyTable.flatMap((value) =>
      typeof value === "object" && value !== null && !("syntax" in value) ? Object.values(value) : [value],
    ) as Flag[];
    const declared = flags.filter((spec) => spec.config !== undefined);
    expect(declared.length).toBeGreaterThan(0);
    for (const spec of declared) {
      const listed = CONFIG_KEY_FLAGS[spec.config as keyof WhConfig];
      expect(listed === "file only" ? [] : listed.map((each) => each.syntax), spec.syntax).toContain(spec.syntax);
    }
  });
});
