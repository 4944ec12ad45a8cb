import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { INSPECTOR_PAGE } from "../../../src/adapters/inspector/page.generated.js";

// The inspector's page is a generated module of src (scripts/bundle-inspector-page.mjs), so that
// tests importing src serve it with no build: here it must be what src/browser/inspector/ gives.

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

describe("the inspector page module", () => {
  it("is what src/browser/inspector/ gives (npm run build writes it again)", () => {
    // Throws, with the script's message naming what to run, when the module is stale.
    execFileSync(process.execPath, ["scripts/bundle-inspector-page.mjs", "--check"], { cwd: ROOT, stdio: "pipe" });
  });

  it("holds one script and one style, each with the nonce the server replaces", () => {
    expect(INSPECTOR_PAGE.match(/<script\b/g)).toEqual(["<script"]);
    expect(INSPECTOR_PAGE).toContain('<script nonce="__NONCE__">');
    expect(INSPECTOR_PAGE).toContain('<style nonce="__NONCE__">');
    expect(INSPECTOR_PAGE).not.toContain("__INSPECTOR_SCRIPT__");
  });
});
