import { afterEach, describe, expect, it, vi } from "vitest";
import * as z from "zod/mini";
import de from "zod/v4/locales/de.js";

// wh shares zod with the application that imports it (one copy in node_modules): importing wh must
// leave the host's zod configuration as the host set it, and wh's own messages stay English.

// zod/mini starts with no locale and no customError: each test leaves it so.
afterEach(() => {
  z.config({ localeError: undefined, customError: undefined });
});

describe("importing wh into an application that configured zod", () => {
  it("keeps the host's German locale, and wh's errors stay English", async () => {
    z.config(de());
    vi.resetModules();
    const wh = await import("../../src/index.js");

    expect(z.string().safeParse(5).error?.issues[0]?.message).toBe("Ungültige Eingabe: erwartet string, erhalten Zahl");
    expect(wh.parseConfig({ webhooks: "x" })).toEqual({ ok: false, issues: ["webhooks: Invalid input: expected array, received string"] });
    const prepared = wh.prepareMessage({ type: "track", userId: 5, event: "E" }, { now: () => new Date(0), newId: () => "id" });
    expect(prepared).toMatchObject({ ok: false, error: expect.stringContaining("Invalid input: expected string, received number") });
  });

  it("keeps a host's customError, which does not reach wh's messages", async () => {
    z.config({ customError: () => "host says no" });
    vi.resetModules();
    const wh = await import("../../src/index.js");

    expect(z.number().safeParse("x").error?.issues[0]?.message).toBe("host says no");
    expect(wh.parseConfig({ sharedSecret: 5 })).toEqual({ ok: false, issues: ["sharedSecret: Invalid input: expected string, received number"] });
  });
});
