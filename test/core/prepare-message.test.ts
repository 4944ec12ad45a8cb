import { describe, expect, it } from "vitest";
import { checkMessage, prepareLine, prepareMessage, type MessageStamps, type PrepareResult } from "../../src/core/message/prepare.js";

const stamps: MessageStamps = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: () => "id-1" };
const NOW = "2026-11-21T09:30:08.276Z";
const IDENTITY = "You must pass either an 'anonymousId' or 'userId'.";

function bodyOf(result: PrepareResult): string {
  if (!result.ok) throw new Error(`expected a prepared message, got ${result.kind}: ${result.error}`);
  return result.message.body;
}

const invalid = (error: string): PrepareResult => ({ ok: false, kind: "invalid-message", error });

describe("prepareMessage: the outbound body of each type", () => {
  it("builds an identify with version, userId, traits, context, messageId and timestamp", () => {
    const result = prepareMessage(
      { type: "identify", userId: "u1", traits: { email: "ada@example.com" }, context: { ip: "203.0.113.7" }, timestamp: NOW, messageId: "m-1" },
      stamps,
    );
    expect(result).toEqual({
      ok: true,
      message: {
        type: "identify",
        body: `{"version":1,"type":"identify","userId":"u1","traits":{"email":"ada@example.com"},"context":{"ip":"203.0.113.7"},"messageId":"m-1","timestamp":"${NOW}"}`,
        userKey: "u1",
        messageId: "m-1",
        enabled: true,
      },
    });
  });

  it("builds a track byte for byte as the signature vector's body", () => {
    const result = prepareMessage(
      { type: "track", userId: "u1", event: "Order Completed", properties: { total: 99.5 }, messageId: "m-1", timestamp: NOW },
      stamps,
    );
    expect(bodyOf(result)).toBe(
      '{"version":1,"type":"track","userId":"u1","event":"Order Completed","properties":{"total":99.5},"messageId":"m-1","timestamp":"2026-11-21T09:30:08.276Z"}',
    );
  });

  it("builds a page with name, category and properties, stamping time and id", () => {
    const result = prepareMessage(
      {
        type: "page",
        anonymousId: "a-77",
        name: "Pricing",
        category: "Docs",
        properties: { path: "/pricing", url: "https://example.com/pricing", plan: "pro" },
      },
      stamps,
    );
    expect(bodyOf(result)).toBe(
      `{"version":1,"type":"page","userId":null,"anonymousId":"a-77","name":"Pricing","category":"Docs","properties":{"path":"/pricing","url":"https://example.com/pricing","plan":"pro"},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });

  it("builds a screen with name and device, os and app context", () => {
    const context = {
      device: { model: "Pixel 9", type: "android" },
      os: { name: "Android", version: "16" },
      app: { build: "412", name: "Shop", version: "4.1.2" },
    };
    expect(bodyOf(prepareMessage({ type: "screen", userId: "u2", name: "Home", context }, stamps))).toBe(
      `{"version":1,"type":"screen","userId":"u2","name":"Home","context":{"device":{"model":"Pixel 9","type":"android"},"os":{"name":"Android","version":"16"},"app":{"build":"412","name":"Shop","version":"4.1.2"}},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });

  it("builds a screen without context with an empty context", () => {
    expect(bodyOf(prepareMessage({ type: "screen", userId: "u2" }, stamps))).toBe(
      `{"version":1,"type":"screen","userId":"u2","context":{},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });

  it("builds a group with groupId and traits", () => {
    expect(bodyOf(prepareMessage({ type: "group", userId: "u1", groupId: "g-acme", traits: { name: "Acme Inc", employees: 250 } }, stamps))).toBe(
      `{"version":1,"type":"group","userId":"u1","groupId":"g-acme","traits":{"name":"Acme Inc","employees":250},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });

  it("builds an alias with the literal 'Previous ID' and 'User ID' keys and no userId", () => {
    const result = prepareMessage({ type: "alias", userId: "u1", previousId: "a-77" }, stamps);
    expect(bodyOf(result)).toBe(`{"version":1,"type":"alias","Previous ID":"a-77","User ID":"u1","messageId":"id-1","timestamp":"${NOW}"}`);
    expect(result.ok && result.message.userKey).toBe("u1");
  });

  it("builds a delete of exactly type, userId and timestamp", () => {
    const result = prepareMessage(
      { type: "delete", userId: "u3", anonymousId: "a-3", messageId: "m-9", context: { ip: "1.2.3.4" }, traits: { a: 1 }, timestamp: "2026-11-21T09:35:00Z" },
      stamps,
    );
    expect(result).toEqual({
      ok: true,
      message: {
        type: "delete",
        body: '{"type":"delete","userId":"u3","timestamp":"2026-11-21T09:35:00.000Z"}',
        userKey: "u3",
        messageId: undefined,
        enabled: true,
        dropped: ["anonymousId", "messageId", "context", "traits"],
      },
    });
  });

  it("defaults empty properties and traits", () => {
    expect(bodyOf(prepareMessage({ type: "track", userId: "u1", event: "E" }, stamps))).toBe(
      `{"version":1,"type":"track","userId":"u1","event":"E","properties":{},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
    expect(bodyOf(prepareMessage({ type: "identify", userId: "u1" }, stamps))).toBe(
      `{"version":1,"type":"identify","userId":"u1","traits":{},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });

  it("sends userId null plus anonymousId when only anonymousId is known", () => {
    const result = prepareMessage({ type: "identify", anonymousId: "a-1" }, stamps);
    expect(bodyOf(result)).toBe(`{"version":1,"type":"identify","userId":null,"anonymousId":"a-1","traits":{},"messageId":"id-1","timestamp":"${NOW}"}`);
    expect(result.ok && result.message.userKey).toBe("a-1");
  });

  it("treats an empty userId as absent", () => {
    expect(bodyOf(prepareMessage({ type: "identify", userId: "", anonymousId: "a-1" }, stamps))).toContain('"userId":null,"anonymousId":"a-1"');
  });

  it("carries both userId and anonymousId when both are given", () => {
    expect(bodyOf(prepareMessage({ type: "track", userId: "u1", anonymousId: "a-1", event: "E" }, stamps))).toContain(
      '"userId":"u1","anonymousId":"a-1","event":"E"',
    );
  });

  it("keeps a given messageId and generates one otherwise", () => {
    const kept = prepareMessage({ type: "track", userId: "u1", event: "E", messageId: "m-42" }, stamps);
    expect(kept.ok && kept.message.messageId).toBe("m-42");
    const generated = prepareMessage({ type: "track", userId: "u1", event: "E" }, stamps);
    expect(generated.ok && generated.message.messageId).toBe("id-1");
  });
});

describe("prepareMessage: null for what the app did not give, as Segment's SDKs send it", () => {
  it("reads null name, category, properties, traits, context keys, timestamp and messageId as absent", () => {
    const page = prepareMessage(
      {
        type: "page",
        userId: "u1",
        anonymousId: null,
        name: null,
        category: null,
        properties: { url: null, title: "T" },
        traits: null,
        context: null,
        integrations: null,
        timestamp: null,
        messageId: null,
      },
      stamps,
    );
    expect(bodyOf(page)).toBe(`{"version":1,"type":"page","userId":"u1","properties":{"url":null,"title":"T"},"messageId":"id-1","timestamp":"${NOW}"}`);
    const screen = prepareMessage({ type: "screen", userId: "u1", name: null, properties: null, context: { device: { model: null }, os: null } }, stamps);
    expect(bodyOf(screen)).toBe(
      `{"version":1,"type":"screen","userId":"u1","context":{"device":{"model":null},"os":null},"messageId":"id-1","timestamp":"${NOW}"}`,
    );
  });
});

describe("prepareMessage: timestamps", () => {
  it.each([
    ["2026-11-21T10:30:08+01:00", "2026-11-21T09:30:08.000Z"],
    ["2026-11-21T09:30:08.5Z", "2026-11-21T09:30:08.500Z"],
    ["2026-11-21", "2026-11-21T00:00:00.000Z"],
    ["2026-11-21T09:30:08", "2026-11-21T09:30:08.000Z"],
  ])("converts %s to %s", (input, expected) => {
    expect(bodyOf(prepareMessage({ type: "track", userId: "u1", event: "E", timestamp: input }, stamps))).toContain(`"timestamp":"${expected}"`);
  });

  it.each(["2026-02-31", "yesterday", "2026-11-21T25:00:00Z", "2026-02-31T10:00:00+01:00"])("rejects %s with a message naming timestamp", (input) => {
    expect(prepareMessage({ type: "track", userId: "u1", event: "E", timestamp: input }, stamps)).toEqual(
      invalid(`timestamp: ${JSON.stringify(input)} is not an ISO 8601 date-time`),
    );
  });
});

describe("prepareMessage: validation", () => {
  it.each([
    ["a track without event", { type: "track", userId: "u1" }, "You must pass 'event'."],
    ["a track with an empty event", { type: "track", userId: "u1", event: "" }, "You must pass 'event'."],
    ["a track without ids", { type: "track", event: "E" }, IDENTITY],
    ["a track without event nor ids (event first)", { type: "track" }, "You must pass 'event'."],
    ["an identify without ids", { type: "identify", traits: { a: 1 } }, IDENTITY],
    ["an identify with an empty userId only", { type: "identify", userId: "" }, IDENTITY],
    ["a page without ids", { type: "page", name: "Home" }, IDENTITY],
    ["a screen without ids", { type: "screen", name: "Home" }, IDENTITY],
    ["a group without groupId", { type: "group", userId: "u1" }, "You must pass a 'groupId'."],
    ["a group without ids", { type: "group", groupId: "g" }, IDENTITY],
    ["a group without groupId nor ids (groupId first)", { type: "group" }, "You must pass a 'groupId'."],
    ["an alias without userId", { type: "alias", previousId: "a-1" }, "You must pass a 'userId'."],
    ["an alias with only anonymousId and previousId", { type: "alias", anonymousId: "a-2", previousId: "a-1" }, "You must pass a 'userId'."],
    ["an alias without previousId", { type: "alias", userId: "u1" }, "You must pass a 'previousId'."],
    ["a delete without userId", { type: "delete", anonymousId: "a-1" }, "You must pass a 'userId'."],
    ["a delete with an empty userId", { type: "delete", userId: "", anonymousId: "a-1" }, "You must pass a 'userId'."],
  ])("rejects %s", (_label, message, error) => {
    expect(prepareMessage(message, stamps)).toEqual(invalid(error));
  });

  it.each([
    ["a numeric userId", { type: "track", userId: 5, event: "E" }, "userId: Invalid input: expected string, received number"],
    ["an unknown type", { type: "nope" }, 'type: expected one of identify, track, page, screen, group, alias, delete (got "nope")'],
    ["no type", { userId: "u1" }, "type: missing type (one of identify, track, page, screen, group, alias, delete)"],
    [
      "a numeric event and array properties",
      { type: "track", userId: "u1", event: 5, properties: [] },
      "event: Invalid input: expected string, received number; properties: Invalid input: expected object, received array",
    ],
    ["an empty messageId", { type: "track", userId: "u1", event: "E", messageId: "" }, "messageId: Too small: expected string to have >=1 characters"],
    [
      "a page whose properties.url is not a string",
      { type: "page", userId: "u1", properties: { url: 5 } },
      "properties.url: Invalid input: expected string, received number",
    ],
    [
      "a screen whose context.device.model is not a string",
      { type: "screen", userId: "u1", context: { device: { model: 9 } } },
      "context.device.model: Invalid input: expected string, received number",
    ],
    ["a number", 5, "Invalid input: expected object, received number"],
    ["null", null, "Invalid input: expected object, received null"],
  ])("rejects %s as path: problem", (_label, message, error) => {
    expect(prepareMessage(message, stamps)).toEqual(invalid(error));
  });
});

describe("prepareMessage: size", () => {
  const padded = (pad: string) => ({ type: "track", userId: "u1", event: "E", properties: { pad }, messageId: "m-1", timestamp: NOW });
  const baseBytes = Buffer.byteLength(bodyOf(prepareMessage(padded(""), stamps)));

  it("accepts a body of exactly 32,000 bytes", () => {
    const result = prepareMessage(padded("x".repeat(32_000 - baseBytes)), stamps);
    expect(Buffer.byteLength(bodyOf(result))).toBe(32_000);
  });

  it("refuses a body of 32,001 bytes as too large", () => {
    expect(prepareMessage(padded("x".repeat(32_001 - baseBytes)), stamps)).toEqual({
      ok: false,
      kind: "too-large",
      error: "message is 32001 bytes of JSON; the limit is 32000 bytes (32 KB)",
    });
  });

  it("counts UTF-8 bytes, not characters", () => {
    const pad = `${"x".repeat(32_001 - baseBytes - 2)}é`;
    const result = prepareMessage(padded(pad), stamps);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.kind).toBe("too-large");
  });
});

describe("prepareMessage: integrations", () => {
  it.each([
    [{ Webhooks: false }, false],
    [{ All: false }, false],
    [{ All: false, Webhooks: true }, true],
    [{ All: false, Webhooks: {} }, true],
    [{ All: false, Webhooks: false }, false],
    [{ All: true, Webhooks: false }, false],
    [{ webhooks: false }, true],
    [{ Segment: false }, true],
    [{}, true],
  ])("with integrations %j the destination is enabled: %s", (integrations, enabled) => {
    const result = prepareMessage({ type: "track", userId: "u1", event: "E", integrations }, stamps);
    expect(result.ok && result.message.enabled).toBe(enabled);
  });

  it("enables the destination when integrations are absent", () => {
    const result = prepareMessage({ type: "track", userId: "u1", event: "E" }, stamps);
    expect(result.ok && result.message.enabled).toBe(true);
  });
});

describe("prepareLine", () => {
  it("prepares an inbound line as prepareMessage does", () => {
    expect(prepareLine('{"type":"alias","userId":"u1","previousId":"a-77","messageId":"m-6","timestamp":"2026-11-21T09:34:00.000Z"}', stamps)).toEqual({
      ok: true,
      message: {
        type: "alias",
        body: '{"version":1,"type":"alias","Previous ID":"a-77","User ID":"u1","messageId":"m-6","timestamp":"2026-11-21T09:34:00.000Z"}',
        userKey: "u1",
        messageId: "m-6",
        enabled: true,
      },
    });
  });

  it("re-serialises an outbound-shaped line compactly by default (what Segment sends)", () => {
    const line = '{"version": 1, "type": "track", "userId": "u1", "event": "E", "properties": {}, "messageId": "m-1", "timestamp": "2026-11-21T09:30:08Z"}';
    const compact = JSON.stringify(JSON.parse(line));
    expect(prepareLine(`  ${line}\r\n`, stamps)).toEqual({
      ok: true,
      message: { type: "track", body: compact, userKey: "u1", messageId: "m-1", enabled: true },
    });
  });

  it("sends an outbound-shaped line as its exact bytes, trimmed, with exactBytes", () => {
    const line = '{"version": 1, "type": "track", "userId": "u1", "event": "E", "properties": {}, "messageId": "m-1", "timestamp": "2026-11-21T09:30:08Z"}';
    expect(prepareLine(`  ${line}\r\n`, stamps, { exactBytes: true })).toEqual({
      ok: true,
      message: { type: "track", body: line, userKey: "u1", messageId: "m-1", enabled: true },
    });
  });

  it("accepts an outbound alias by its literal keys and keys it by 'User ID'", () => {
    const line = '{"version":1,"type":"alias","Previous ID":"a-77","User ID":"u1","messageId":"m-6","timestamp":"2026-11-21T09:34:00.000Z"}';
    expect(prepareLine(line, stamps)).toEqual({ ok: true, message: { type: "alias", body: line, userKey: "u1", messageId: "m-6", enabled: true } });
  });

  it("treats a line with alias keys but no version as outbound", () => {
    const line = '{"type":"alias","Previous ID":"a-77","User ID":"u1","timestamp":"2026-11-21T09:34:00.000Z"}';
    const result = prepareLine(line, stamps);
    expect(result.ok && result.message.body).toBe(line);
  });

  it("keys an outbound line with only anonymousId by it", () => {
    const line =
      '{"version":1,"type":"page","userId":null,"anonymousId":"a-1","properties":{"path":"/"},"messageId":"m-3","timestamp":"2026-11-21T09:30:08.276Z"}';
    expect(prepareLine(line, stamps)).toEqual({ ok: true, message: { type: "page", body: line, userKey: "a-1", messageId: "m-3", enabled: true } });
  });

  it("honours integrations on an outbound line", () => {
    const line = '{"version":1,"type":"track","userId":"u1","event":"E","integrations":{"All":false},"timestamp":"2026-11-21T09:30:08.276Z"}';
    const result = prepareLine(line, stamps);
    expect(result.ok && result.message.enabled).toBe(false);
  });

  it.each([
    ["a track without event", '{"version":1,"type":"track","userId":"u1","timestamp":"2026-11-21T09:30:08.276Z"}', "You must pass 'event'."],
    ["a track without ids", '{"version":1,"type":"track","userId":null,"event":"E","timestamp":"2026-11-21T09:30:08.276Z"}', IDENTITY],
    ["an alias without 'Previous ID'", '{"version":1,"type":"alias","User ID":"u1","timestamp":"2026-11-21T09:30:08.276Z"}', "You must pass a 'previousId'."],
    [
      "a delete with extra keys",
      '{"version":1,"type":"delete","userId":"u3","timestamp":"2026-11-21T09:35:00.000Z"}',
      "a delete carries only type, userId and timestamp",
    ],
    ["no timestamp", '{"version":1,"type":"track","userId":"u1","event":"E"}', "timestamp: Invalid input: expected string, received undefined"],
    [
      "a bad timestamp",
      '{"version":1,"type":"track","userId":"u1","event":"E","timestamp":"yesterday"}',
      'timestamp: "yesterday" is not an ISO 8601 date-time',
    ],
    [
      "a page whose properties.url is not a string",
      '{"version":1,"type":"page","userId":"u1","properties":{"url":5},"timestamp":"2026-11-21T09:30:08.276Z"}',
      "properties.url: Invalid input: expected string, received number",
    ],
  ])("rejects an outbound line that is %s", (_label, line, error) => {
    expect(prepareLine(line, stamps)).toEqual(invalid(error));
  });

  it("refuses an outbound line over 32,000 bytes", () => {
    const line = JSON.stringify({ version: 1, type: "track", userId: "u1", event: "E", properties: { pad: "x".repeat(32_000) }, timestamp: NOW });
    const result = prepareLine(line, stamps);
    expect(!result.ok && result.kind).toBe("too-large");
  });

  it("reports a line that is not JSON as invalid-json", () => {
    const result = prepareLine("{bad", stamps);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.kind).toBe("invalid-json");
    expect(!result.ok && result.error).toMatch(/^invalid JSON: /);
  });
});

describe("checkMessage: prepareMessage's judgement without the body (wh serve accepting)", () => {
  const events: Record<string, unknown>[] = [
    { type: "track", userId: "u1", event: "E", timestamp: NOW },
    { type: "track", anonymousId: "a1", timestamp: NOW },
    { type: "identify", timestamp: NOW },
    { type: "page", userId: "u1", properties: { url: 5 }, timestamp: NOW },
    { type: "screen", userId: "u1", context: { app: { version: 3 } } },
    { type: "alias", userId: "u1", previousId: "p1" },
    { type: "alias", userId: "u1" },
    { type: "group", anonymousId: "a1", groupId: "g1", timestamp: "yesterday" },
    { type: "delete", userId: "u1" },
    { type: "shout", userId: "u1" },
    { version: 1, type: "alias", "Previous ID": "p1", "User ID": "u1", timestamp: NOW },
    { version: 1, type: "track", userId: "u1", timestamp: NOW },
    { type: "track", userId: "", anonymousId: "a2", event: "E", properties: [] },
  ];
  for (const mode of ["classic", "actions"] as const) {
    it(`refuses what prepareMessage refuses from the tracking API, for its reason, and says the same user key (${mode})`, () => {
      for (const event of events) {
        const prepared = prepareMessage(event, stamps, { mode, fromTrackingApi: true });
        const expected = prepared.ok ? { ok: true, userKey: prepared.message.userKey } : prepared;
        expect(checkMessage(event, stamps, mode), JSON.stringify(event)).toEqual(expected);
      }
    });
  }
});
