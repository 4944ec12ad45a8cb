import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SpoolStore } from "../../../src/engine/serve/spool-store.js";
import { storedText, type AcceptedEvent } from "../../../src/engine/serve/stored-event.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-spool-store-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function accepted(name: string): AcceptedEvent {
  const stored = { source: null, event: { type: "track", event: name, messageId: name } };
  return { stored, userKey: undefined, text: storedText(stored) };
}

describe("SpoolStore", () => {
  it("takes events up to --max-spool's last byte, counted in UTF-8, and refuses one byte more", async () => {
    // Two bytes of UTF-8 each: their length alone would put the record over the limit.
    const event = accepted("é".repeat(500));
    const bytes = Buffer.byteLength(event.text) + 1;
    const store = await SpoolStore.open({ dataDir: dir, maxBytes: bytes * 2 - 1, onRecovered: () => undefined });
    expect(await store.append([event])).toBeUndefined();
    expect(await store.append([accepted("ü".repeat(500))])).toBe(`the spool is full (${bytes} bytes, --max-spool); retry later`);
    expect(store.health()).toEqual({ spool: { depth: 1, bytes } });
    await store.close();
    const roomy = await SpoolStore.open({ dataDir: dir, maxBytes: bytes * 2, onRecovered: () => undefined });
    expect(await roomy.append([accepted("ü".repeat(500))])).toBeUndefined();
    expect(roomy.health()).toEqual({ spool: { depth: 2, bytes: bytes * 2 } });
    await roomy.close();
  });
});
