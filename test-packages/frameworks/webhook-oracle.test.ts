import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SEND_FIELDS } from "../../src/core/destination/send-action.js";
import { runInProcess } from "../../test/helpers/in-process.js";
import { closedAfterEach, type RecordedRequest, type RecordingServer } from "../../test/helpers/recording-server.js";
import { makeTempDir, removeTempDirs } from "../../test/helpers/run-wh.js";

// The oracle: Segment's own Webhooks (Actions) destination (@segment/action-destinations, a
// package of this test package, never imported by src/) run by actions-core's createTestIntegration, the harness
// of its own tests, beside `wh replay` with the same events and subscriptions; both send to one
// recording server on 127.0.0.1, and every request must be the same. The cases are those of
// action-destinations' webhook/__test__/webhook.test.ts that send (or refuse to send), and the
// mapping and three-subscription cases of issue 35. actions-core's request client does a real
// fetch, so no nock: the mappings' URLs are the recording server's.

const requireDev = createRequire(import.meta.url);
const { createTestIntegration, createTestEvent } = requireDev("@segment/actions-core") as {
  createTestIntegration(destination: unknown): TestDestination;
  createTestEvent(event?: Record<string, unknown>): Record<string, unknown>;
};
const webhook = (requireDev("@segment/action-destinations/dist/destinations/webhook") as { default: WebhookDefinition }).default;
const fql = requireDev("@segment/destination-subscriptions") as { parseFql(text: string): unknown; validate(ast: unknown, event: unknown): boolean };

interface WebhookDefinition {
  actions: { send: { fields: Record<string, unknown> } };
}
interface TestCall {
  mapping: Record<string, unknown>;
  settings?: Record<string, unknown>;
  useDefaultMappings?: boolean;
}
interface TestDestination {
  testAction(action: "send", call: TestCall & { event: Record<string, unknown> }): Promise<unknown[]>;
  testBatchAction(action: "send", call: TestCall & { events: Record<string, unknown>[] }): Promise<unknown[]>;
}

const SECRET = "abc123";
const server = closedAfterEach();
afterAll(removeTempDirs);

/** What must be the same: the receiver sees these, User-Agent included. The transport's own headers (host, connection, fetch's accept and accept-encoding) are not the mapping's. */
function comparable(request: RecordedRequest): Record<string, unknown> {
  const headers = { ...request.headers };
  for (const name of ["host", "connection", "accept", "accept-encoding"]) delete headers[name];
  return { method: request.method, path: request.path, headers, body: request.body.toString("utf8") };
}

function sortedRequests(requests: readonly RecordedRequest[]): Record<string, unknown>[] {
  return requests.map(comparable).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

interface Subscription {
  name: string;
  trigger: string;
  settings: Record<string, unknown>;
}

/** Runs wh replay over the events with these subscriptions (and the secret, when signing). */
async function replayWithWh(events: readonly Record<string, unknown>[], subscriptions: readonly Subscription[], signed: boolean) {
  const dir = await makeTempDir();
  const config = {
    ...(signed ? { sharedSecret: SECRET } : {}),
    subscriptions: subscriptions.map((subscription) => ({ actionSlug: "send", enabled: true, ...subscription })),
  };
  await writeFile(join(dir, ".whrc.json"), JSON.stringify(config));
  await writeFile(join(dir, "events.ndjson"), events.map((event) => `${JSON.stringify(event)}\n`).join(""));
  // Each line is the event as Segment holds it: actions mode maps it as it is (nothing added).
  return runInProcess(["--json", "replay", "events.ndjson"], { cwd: dir });
}

/** Runs Segment's destination for each event with each subscription whose trigger matches (FQL by destination-subscriptions). */
async function sendWithSegment(events: readonly Record<string, unknown>[], subscriptions: readonly Subscription[], signed: boolean): Promise<void> {
  const destination = createTestIntegration(webhook);
  for (const event of events) {
    for (const subscription of subscriptions) {
      if (!fql.validate(fql.parseFql(subscription.trigger), event)) continue;
      await destination.testAction("send", {
        event,
        mapping: subscription.settings,
        settings: signed ? { sharedSecret: SECRET } : {},
        useDefaultMappings: true,
      });
    }
  }
}

/**
 * The same events and subscriptions sent by Segment's destination, then replayed by wh, to one
 * receiver: wh exits 0 and the receiver gets the same requests from both (the two sides returned
 * for what a test checks besides).
 */
async function compare(receiver: RecordingServer, events: readonly Record<string, unknown>[], subscriptions: readonly Subscription[], signed: boolean) {
  await sendWithSegment(events, subscriptions, signed);
  const expected = sortedRequests(receiver.requests.splice(0));
  const result = await replayWithWh(events, subscriptions, signed);
  const actual = sortedRequests(receiver.requests);
  expect(result.code, result.stderr).toBe(0);
  expect(actual).toEqual(expected);
  return { expected, result };
}

const TRACK = 'type = "track"';

describe("wh replay with subscriptions sends what Segment's Webhooks (Actions) destination sends", () => {
  it("holds wh's Send fields equal to the published destination's", () => {
    expect(JSON.parse(JSON.stringify(SEND_FIELDS))).toEqual(JSON.parse(JSON.stringify(webhook.actions.send.fields)));
  });

  it("webhook.test: should work with default mapping (the whole event)", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const subscriptions = [{ name: "All", trigger: TRACK, settings: { url: `${receiver.url}/` } }];
    const { expected } = await compare(receiver, [event], subscriptions, false);
    expect(expected).toHaveLength(1);
  });

  it("webhook.test: supports customizations (PUT, a static header, data { cool: true }: 13 bytes)", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const settings = { url: receiver.url, method: "PUT", headers: { "Custom-Header": "Custom-Value" }, data: { cool: true } };
    const destination = createTestIntegration(webhook);
    await destination.testAction("send", { event, mapping: settings });
    const expected = sortedRequests(receiver.requests.splice(0));
    const result = await replayWithWh([event], [{ name: "Custom", trigger: TRACK, settings }], false);
    expect(result.code, result.stderr).toBe(0);
    expect(expected[0]?.body).toBe('{"cool":true}');
    expect(sortedRequests(receiver.requests)).toEqual(expected);
  });

  it("webhook.test: supports request signing (data from $.properties, X-Signature over it)", async () => {
    const receiver = await server();
    const event = createTestEvent({ properties: { cool: true } });
    const subscriptions = [{ name: "Signed", trigger: TRACK, settings: { url: receiver.url, data: { "@path": "$.properties" } } }];
    const { expected } = await compare(receiver, [event], subscriptions, true);
    expect((expected[0]?.headers as Record<string, unknown> | undefined)?.["x-signature"]).toMatch(/^[0-9a-f]{40}$/);
  });

  it("webhook.test: supports request signing with batched events (one array, signed over the first data)", async () => {
    const receiver = await server();
    const events = [createTestEvent({ properties: { cool: false } }), createTestEvent({ properties: { cool: true } })];
    const settings = { url: receiver.url, data: { "@path": "$.properties" } };
    const destination = createTestIntegration(webhook);
    await destination.testBatchAction("send", { events, mapping: settings, settings: { sharedSecret: SECRET }, useDefaultMappings: true });
    const expected = sortedRequests(receiver.requests.splice(0));
    const result = await replayWithWh(events, [{ name: "Batched", trigger: TRACK, settings: { ...settings, enable_batching: true } }], true);
    expect(result.code, result.stderr).toBe(0);
    expect(expected).toHaveLength(1);
    expect(sortedRequests(receiver.requests)).toEqual(expected);
  });

  it("webhook.test: should throw an error when header value is invalid (nothing sent; wh: the event is invalid, for the same reason)", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const settings = { url: receiver.url, method: "PUT", headers: { "Custom-Header": "هيثم" }, data: { cool: true } };
    const destination = createTestIntegration(webhook);
    const refused = await destination.testAction("send", { event, mapping: settings }).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(receiver.requests).toHaveLength(0);
    const result = await replayWithWh([event], [{ name: "Arabic", trigger: TRACK, settings }], false);
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(0);
    const record = result.stdout.split("\n").find((line) => line.includes('"outcome":"invalid"'));
    expect(record).toContain((refused as Error).message);
    expect(record).toContain('subscription \\"Arabic\\"');
  });

  it("webhook.test: url, method and headers mapped per event, batched by batch_keys (one request per distinct url, method and headers)", async () => {
    const receiver = await server();
    const events = [
      createTestEvent({ properties: { url: `${receiver.url}/one`, method: "POST", headers: { "sample-header": "value1" } } }),
      createTestEvent({ properties: { url: `${receiver.url}/one`, method: "PUT", headers: { "sample-header": "value1" } } }),
      createTestEvent({ properties: { url: `${receiver.url}/one`, method: "POST", headers: { "sample-header": "value1" } } }),
    ];
    const settings = {
      url: { "@path": "$.properties.url" },
      method: { "@path": "$.properties.method" },
      headers: { "sample-header": { "@path": "$.properties.headers.sample-header" } },
    };
    // Segment's pipeline groups by the mapped batch_keys (url, method, headers) before performBatch:
    // the POSTs in one batch, the PUT in another.
    const destination = createTestIntegration(webhook);
    for (const group of [[events[0], events[2]], [events[1]]]) {
      await destination.testBatchAction("send", { events: group as Record<string, unknown>[], mapping: settings, useDefaultMappings: true });
    }
    const expected = sortedRequests(receiver.requests.splice(0));
    const result = await replayWithWh(events, [{ name: "Per event", trigger: TRACK, settings: { ...settings, enable_batching: true } }], false);
    expect(result.code, result.stderr).toBe(0);
    expect(expected).toHaveLength(2);
    expect((expected[0]?.headers as Record<string, unknown> | undefined)?.["sample-header"]).toBe("value1");
    expect(sortedRequests(receiver.requests)).toEqual(expected);
  });

  it("three subscriptions over five events: 6 requests, each event to each subscription its trigger matches", async () => {
    const receiver = await server();
    const events = [
      createTestEvent({ event: "Order Completed", messageId: "e1" }),
      createTestEvent({ event: "Order Completed", messageId: "e2", properties: { total: 2 } }),
      createTestEvent({ type: "identify", event: undefined, traits: { name: "Ada" }, messageId: "e3" }),
      createTestEvent({ type: "page", event: undefined, name: "Home", messageId: "e4" }),
      createTestEvent({ type: "group", event: undefined, groupId: "g1", messageId: "e5" }),
    ].map((event) => JSON.parse(JSON.stringify(event)) as Record<string, unknown>);
    const subscriptions = [
      { name: "A", trigger: TRACK, settings: { url: `${receiver.url}/a` } },
      { name: "B", trigger: 'type = "identify" or type = "page"', settings: { url: `${receiver.url}/b`, data: { "@path": "$.traits" } } },
      { name: "C", trigger: 'event = "Order Completed"', settings: { url: `${receiver.url}/c`, method: "PATCH", data: { "@path": "$.properties" } } },
    ];
    const { expected, result } = await compare(receiver, events, subscriptions, true);
    expect(expected).toHaveLength(6);
    expect(result.stdout).toContain('"reason":"matched no subscription"');
  });

  it("a mapping of @path, @template and @if: the same bytes, the same signature", async () => {
    const receiver = await server();
    const event = JSON.parse(JSON.stringify(createTestEvent({ type: "identify", event: undefined, traits: { name: "Ada" } }))) as Record<string, unknown>;
    const data = {
      user: { "@path": "$.userId" },
      greeting: { "@template": "Hello {{traits.name}}" },
      // biome-ignore lint/suspicious/noThenProperty: mapping-kit's @if directive is spelled so.
      plan: { "@if": { exists: { "@path": "$.traits.plan" }, then: { "@path": "$.traits.plan" }, else: "free" } },
    };
    const subscriptions = [{ name: "Greeting", trigger: 'type = "identify"', settings: { url: receiver.url, data } }];
    await compare(receiver, [event], subscriptions, true);
  });

  it("the other directives the Send action accepts (@case, @replace, @arrayPath, @json, @flatten, @merge, @literal) and literals", async () => {
    const receiver = await server();
    const event = createTestEvent({
      properties: {
        Plan: "Pro Plan",
        items: [
          { sku: "a", n: 1 },
          { sku: "b", n: 2 },
        ],
        nested: { a: { b: 1 } },
      },
    });
    const data = {
      lower: { "@case": { operator: "lower", value: { "@path": "$.properties.Plan" } } },
      replaced: { "@replace": { pattern: " ", replacement: "-", value: { "@path": "$.properties.Plan" } } },
      skus: { "@arrayPath": ["$.properties.items", { id: { "@path": "$.sku" } }] },
      encoded: { "@json": { mode: "encode", value: { "@path": "$.properties.nested" } } },
      flat: { "@flatten": { separator: ".", value: { "@path": "$.properties.nested" } } },
      merged: { "@merge": { direction: "right", objects: [{ "@path": "$.properties.nested" }, { extra: true }] } },
      literal: { "@literal": { "@path": "not a directive" } },
      constant: [1, "two", null],
    };
    const subscriptions = [{ name: "Directives", trigger: TRACK, settings: { url: receiver.url, data } }];
    await compare(receiver, [event], subscriptions, true);
  });

  it("a mapping that fails to resolve (url missing for this event) is an invalid event with Segment's reason; Segment sends nothing", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const settings = { url: { "@path": "$.properties.nowhere" } };
    const destination = createTestIntegration(webhook);
    const refused = await destination.testAction("send", { event, mapping: settings, useDefaultMappings: true }).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    const result = await replayWithWh([event], [{ name: "Nowhere", trigger: TRACK, settings }], false);
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(0);
    expect(result.stdout).toContain(JSON.stringify((refused as Error).message).slice(1, -1));
  });

  it("data that maps to nothing: no body, no Content-Type, no X-Signature", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const subscriptions = [{ name: "Empty", trigger: TRACK, settings: { url: receiver.url, data: { "@path": "$.properties.nowhere" } } }];
    const { expected } = await compare(receiver, [event], subscriptions, true);
    expect(expected[0]).toMatchObject({ body: "", headers: { "content-length": "0" } });
  });

  it("mapped headers replace X-Signature and User-Agent whatever their case; a JSON body keeps its Content-Type", async () => {
    const receiver = await server();
    const event = createTestEvent();
    const headers = { "x-signature": "mine", "User-Agent": "their-agent", "Content-Type": "text/plain" };
    const subscriptions = [{ name: "Headers", trigger: TRACK, settings: { url: receiver.url, headers, data: { a: 1 } } }];
    const { expected } = await compare(receiver, [event], subscriptions, true);
    expect(receiver.requests.map((request) => request.headers["user-agent"])).toEqual(["their-agent"]);
    expect(expected[0]?.headers).toMatchObject({ "x-signature": "mine", "content-type": "application/json" });
  });
});
