import { describe, expect, it } from "vitest";
import { buildIngestMessage, type IngestMessageResult } from "../../src/core/message/ingest-message.js";
import { MAX_MESSAGE_BYTES } from "../../src/core/message/rules.js";

const NOW = "2026-11-21T09:30:08.276Z";
const stamps = { now: () => new Date(NOW), newId: () => "00000000-0000-4000-8000-000000000001" };
const library = { name: "wh", version: "9.9.9" };

const build = (input: unknown): IngestMessageResult => buildIngestMessage(input, stamps, library);

function accepted(result: IngestMessageResult): Extract<IngestMessageResult, { ok: true }> {
  if (!result.ok) throw new Error(`expected the message to be accepted, got ${result.code}: ${result.error}`);
  return result;
}

function refused(result: IngestMessageResult): Extract<IngestMessageResult, { ok: false }> {
  if (result.ok) throw new Error(`expected the message to be refused, got ${result.json}`);
  return result;
}

describe("buildIngestMessage", () => {
  it("serialises a track with a new messageId, the current timestamp and context.library, exactly", () => {
    const result = accepted(build({ type: "track", userId: "u1", event: "Order Completed", properties: { total: 12.5 } }));
    expect(result.json).toBe(
      '{"type":"track","userId":"u1","event":"Order Completed","properties":{"total":12.5},' +
        '"context":{"library":{"name":"wh","version":"9.9.9"}},"messageId":"00000000-0000-4000-8000-000000000001","timestamp":"2026-11-21T09:30:08.276Z"}',
    );
    expect(result.type).toBe("track");
    expect(result.messageId).toBe("00000000-0000-4000-8000-000000000001");
    expect(result.bytes).toBe(Buffer.byteLength(result.json));
  });

  it("keeps a given messageId, converts a given timestamp to UTC milliseconds and keeps other context fields beside library", () => {
    const result = accepted(
      build({
        type: "alias",
        userId: "u2",
        previousId: "anon-9",
        messageId: "m-given",
        timestamp: "2026-01-02T03:04:05+02:00",
        context: { ip: "203.0.113.9", locale: "fr-FR" },
      }),
    );
    expect(JSON.parse(result.json)).toEqual({
      type: "alias",
      userId: "u2",
      previousId: "anon-9",
      messageId: "m-given",
      timestamp: "2026-01-02T01:04:05.000Z",
      context: { ip: "203.0.113.9", locale: "fr-FR", library: { name: "wh", version: "9.9.9" } },
    });
    expect(result.messageId).toBe("m-given");
  });

  it("keeps the seed's fields of each type", () => {
    const page = accepted(
      build({ type: "page", anonymousId: "a1", name: "Home", category: "Docs", properties: { url: "https://example.com/" }, integrations: { All: false } }),
    );
    expect(JSON.parse(page.json)).toMatchObject({
      type: "page",
      anonymousId: "a1",
      name: "Home",
      category: "Docs",
      properties: { url: "https://example.com/" },
      integrations: { All: false },
    });
    const group = accepted(build({ type: "group", userId: "u1", groupId: "g1", traits: { plan: "pro" } }));
    expect(JSON.parse(group.json)).toMatchObject({ type: "group", userId: "u1", groupId: "g1", traits: { plan: "pro" } });
    const identify = accepted(build({ type: "identify", userId: "u1", traits: { email: "a@example.com" } }));
    expect(JSON.parse(identify.json)).toMatchObject({ type: "identify", userId: "u1", traits: { email: "a@example.com" } });
    const screen = accepted(build({ type: "screen", userId: "u1", name: "Checkout" }));
    expect(JSON.parse(screen.json)).toMatchObject({ type: "screen", userId: "u1", name: "Checkout" });
  });

  it("refuses a delete, which is not a client call", () => {
    const result = refused(build({ type: "delete", userId: "u1" }));
    expect(result.code).toBe("E_INVALID_MESSAGE");
    expect(result.error).toContain("a delete is not sent by the client");
  });

  it("refuses an unknown type", () => {
    expect(refused(build({ type: "purchase", userId: "u1" })).code).toBe("E_INVALID_MESSAGE");
  });

  it.each([
    ["a track without event", { type: "track", userId: "u1" }, "You must pass 'event'."],
    ["a track with an empty event", { type: "track", userId: "u1", event: "" }, "You must pass 'event'."],
    ["a track without userId and anonymousId", { type: "track", event: "E" }, "You must pass either an 'anonymousId' or 'userId'."],
    ["an identify without userId and anonymousId", { type: "identify", traits: {} }, "You must pass either an 'anonymousId' or 'userId'."],
    ["a page without userId and anonymousId", { type: "page", name: "Home" }, "You must pass either an 'anonymousId' or 'userId'."],
    ["a screen with an empty userId", { type: "screen", userId: "", name: "Home" }, "You must pass either an 'anonymousId' or 'userId'."],
    ["a group without groupId", { type: "group", userId: "u1" }, "You must pass a 'groupId'."],
    ["a group without userId and anonymousId", { type: "group", groupId: "g1" }, "You must pass either an 'anonymousId' or 'userId'."],
    ["an alias without userId", { type: "alias", previousId: "p1" }, "You must pass a 'userId'."],
    ["an alias without previousId", { type: "alias", userId: "u1" }, "You must pass a 'previousId'."],
  ])("refuses %s with analytics-go's words", (_name, input, words) => {
    const result = refused(build(input));
    expect(result.code).toBe("E_INVALID_MESSAGE");
    expect(result.error).toBe(words);
  });

  it("accepts an anonymousId alone in place of a userId", () => {
    expect(accepted(build({ type: "track", anonymousId: "anon-1", event: "E" })).type).toBe("track");
  });

  it("refuses a timestamp that is not ISO 8601", () => {
    const result = refused(build({ type: "track", userId: "u1", event: "E", timestamp: "yesterday" }));
    expect(result.code).toBe("E_INVALID_MESSAGE");
    expect(result.error).toContain("timestamp");
  });

  it("refuses fields of the wrong type", () => {
    expect(refused(build({ type: "track", userId: "u1", event: "E", properties: "not an object" })).code).toBe("E_INVALID_MESSAGE");
  });

  describe("the 32,000-byte limit", () => {
    const withPadding = (padding: number): unknown => ({ type: "track", userId: "u1", event: "E", properties: { pad: "x".repeat(padding) } });
    const baseBytes = accepted(build(withPadding(0))).bytes;

    it("accepts a message of exactly 32,000 bytes of JSON", () => {
      const result = accepted(build(withPadding(MAX_MESSAGE_BYTES - baseBytes)));
      expect(result.bytes).toBe(32_000);
      expect(Buffer.byteLength(result.json)).toBe(32_000);
    });

    it("refuses a message of 32,001 bytes with E_MESSAGE_TOO_LARGE", () => {
      const result = refused(build(withPadding(MAX_MESSAGE_BYTES - baseBytes + 1)));
      expect(result.code).toBe("E_MESSAGE_TOO_LARGE");
      expect(result.error).toContain("32001 bytes");
    });

    it("counts bytes, not characters", () => {
      // "é" is two bytes in UTF-8: 16,000 of them and the rest of the message pass 32,000 bytes.
      const result = refused(build({ type: "track", userId: "u1", event: "E", properties: { pad: "é".repeat(16_000) } }));
      expect(result.code).toBe("E_MESSAGE_TOO_LARGE");
    });
  });
});
