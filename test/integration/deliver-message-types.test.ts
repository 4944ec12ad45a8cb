import { createHmac } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { prepareLine, prepareMessage, type MessageStamps, type PreparedMessage } from "../../src/core/message/prepare.js";
import type { MessageType } from "../../src/core/message/types.js";
import { USER_AGENT, VERSION } from "../../src/version.js";
import { createHarness, deliver, targetOf } from "./support.js";

const SECRET = "whsec-integration-🔑";
const STAMPS: MessageStamps = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: () => "00000000-0000-4000-8000-000000000042" };

/** One input per type, with non-ASCII text and a line separator so the bytes are not plain ASCII. */
const INPUTS: Record<MessageType, Record<string, unknown>> = {
  identify: { type: "identify", userId: "u1", traits: { name: "Zoë Ångström", motto: "a\u2028b" }, context: { ip: "203.0.113.7" } },
  track: {
    type: "track",
    userId: "u1",
    event: "Order Completed",
    properties: { total: 99.5, currency: "€", note: '☕ "quoted"' },
    timestamp: "2026-11-21T10:30:08+01:00",
  },
  page: { type: "page", anonymousId: "a-77", name: "Pricing", properties: { path: "/pricing", title: "Prix — été", url: "https://example.com/pricing" } },
  screen: {
    type: "screen",
    userId: "u2",
    name: "Home",
    context: { device: { model: "Pixel 9", type: "android" }, os: { name: "Android", version: "16" }, app: { build: "412", name: "Shop", version: "4.1.2" } },
  },
  group: { type: "group", userId: "u1", groupId: "g-acme", traits: { name: "Acme 株式会社", employees: 250 } },
  alias: { type: "alias", userId: "u1", previousId: "a-77" },
  delete: { type: "delete", userId: "u3", timestamp: "2026-11-21T09:35:00.000Z" },
};

function prepare(value: unknown): PreparedMessage {
  const result = prepareMessage(value, STAMPS);
  if (!result.ok) throw new Error(`the test input is invalid: ${result.error}`);
  return result.message;
}

const hmacHex = (secret: string, bytes: Buffer): string => createHmac("sha1", secret).update(bytes).digest("hex");

describe("deliverMessage over HTTP to a real receiver", () => {
  const harness = createHarness();
  afterEach(() => harness.close());

  it.each(Object.keys(INPUTS) as MessageType[])("posts a %s message as the prepared bytes, signed over the bytes that arrive", async (type) => {
    const message = prepare(INPUTS[type]);
    expect(message.type).toBe(type);
    const server = await harness.server();
    const { report } = await deliver(message.body, {
      targets: [targetOf(server.url, { Authorization: "Bearer t-123", "X-Env": "staging" })],
      transport: harness.transport(),
      sharedSecret: SECRET,
    });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: server.url, attempts: 1 });
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    if (request === undefined) throw new Error("no request recorded");
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/hook");
    expect(request.body.equals(Buffer.from(message.body, "utf8"))).toBe(true);
    expect((JSON.parse(request.body.toString("utf8")) as { type: string }).type).toBe(type);
    expect(request.headers["x-signature"]).toBe(hmacHex(SECRET, request.body));
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["user-agent"]).toBe(`wh/${VERSION}`);
    expect(request.headers["user-agent"]).toBe(USER_AGENT);
    expect(request.headers.authorization).toBe("Bearer t-123");
    expect(request.headers["x-env"]).toBe("staging");
  });

  it("with exactBytes sends an outbound-shaped line as its own bytes, whitespace and key order kept, and signs those", async () => {
    const line =
      '{ "version":1,"type":"track",  "userId":"u1", "event":"Signed Up","properties":{"b":2,"a":"\\u00e9"},"timestamp":"2026-11-21T09:30:08.276Z" }';
    const prepared = prepareLine(line, STAMPS, { exactBytes: true });
    if (!prepared.ok) throw new Error(prepared.error);
    const server = await harness.server();
    const { report } = await deliver(prepared.message.body, { targets: [targetOf(server.url)], transport: harness.transport(), sharedSecret: SECRET });

    expect(report.outcome).toBe("delivered");
    const [request] = server.requests;
    expect(request?.body.toString("utf8")).toBe(line.trim());
    expect(request?.headers["x-signature"]).toBe(hmacHex(SECRET, Buffer.from(line.trim(), "utf8")));
  });

  it("sends no X-Signature header when no secret is set", async () => {
    const message = prepare(INPUTS.track);
    const server = await harness.server();
    const { report } = await deliver(message.body, { targets: [targetOf(server.url)], transport: harness.transport() });

    expect(report.outcome).toBe("delivered");
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers).not.toHaveProperty("x-signature");
    expect(server.requests[0]?.headers["content-type"]).toBe("application/json");
  });

  it("carries the URL's query string and path to the receiver", async () => {
    const message = prepare(INPUTS.identify);
    const server = await harness.server();
    const url = server.url.replace(/\/hook$/, "/in/segment?source=wh&x=%C3%A9");
    const { report } = await deliver(message.body, { targets: [targetOf(url)], transport: harness.transport() });

    expect(report).toMatchObject({ outcome: "delivered", deliveredTo: url });
    expect(server.requests[0]?.path).toBe("/in/segment?source=wh&x=%C3%A9");
  });
});
