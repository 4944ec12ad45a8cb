import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as wh from "../../src/index.js";
import { Analytics, createUndiciTransport, createWebhookSender, InputError, UsageError, type WebhookSender } from "../../src/index.js";

// Every entry point of the library, called from plain JavaScript with what the types forbid: each
// refuses with one of wh's own errors naming the setting (or, for a function whose contract is a
// result, returns its "invalid" result naming it), never a raw TypeError from deep inside.

/** What plain JavaScript may pass where the types say otherwise. */
const js = (value: unknown): never => value as never;
const cyclic = (): Record<string, unknown> => {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
};
const deep = (levels: number): unknown => {
  let value: unknown = {};
  for (let level = 0; level < levels; level += 1) value = { inner: value };
  return value;
};
/** Past Node's timers (2^31 - 1 ms): setTimeout fires such a delay at once, with a warning. */
const PAST_TIMERS_MS = 2 ** 31;
const URL_ = "http://127.0.0.1:9";
const STAMPS = { now: () => new Date("2026-11-25T10:00:00.000Z"), newId: () => "m-1" };
const TRACK = { type: "track", userId: "u1", event: "E" };

interface Row {
  call: () => unknown;
  /** The setting (or field) the error names. */
  names: RegExp;
  /** wh's error it throws; "result" when the function's contract is an { ok: false } result. */
  refusal?: typeof UsageError | typeof InputError | "result";
}

let transport: ReturnType<typeof createUndiciTransport>;
let sender: WebhookSender;
const analytics = (): Analytics => new Analytics({ writeKey: "wk", endpoint: URL_, transport, flushAt: 1_000 });

beforeAll(async () => {
  transport = createUndiciTransport();
  sender = await createWebhookSender({ webhooks: URL_, maxAttempts: 1 });
});

afterAll(async () => {
  await sender.close();
  await transport.close();
});

const senderRows: Record<string, Row> = {
  "no settings": { call: () => createWebhookSender(js(undefined)), names: /settings/ },
  "null settings": { call: () => createWebhookSender(js(null)), names: /settings/ },
  "a URL instead of settings": { call: () => createWebhookSender(js(URL_)), names: /settings/ },
  "{}": { call: () => createWebhookSender(js({})), names: /webhooks/ },
  "webhooks: a number": { call: () => createWebhookSender(js({ webhooks: 5 })), names: /webhooks/ },
  "webhooks: null": { call: () => createWebhookSender(js({ webhooks: null })), names: /webhooks/ },
  "webhooks: [{}]": { call: () => createWebhookSender(js({ webhooks: [{}] })), names: /webhooks\[0\]\.url/ },
  "webhooks: a cyclic object": { call: () => createWebhookSender(js({ webhooks: cyclic() })), names: /webhooks/ },
  "webhooks[0].headers: a string": { call: () => createWebhookSender(js({ webhooks: [{ url: URL_, headers: "x" }] })), names: /webhooks\[0\]\.headers/ },
  "webhooks: six URLs": { call: () => createWebhookSender({ webhooks: Array(6).fill(URL_) }), names: /webhooks/ },
  'mode: "bogus"': { call: () => createWebhookSender(js({ webhooks: URL_, mode: "bogus" })), names: /mode/ },
  'method: "DELETE"': { call: () => createWebhookSender(js({ webhooks: URL_, mode: "actions", method: "DELETE" })), names: /method/ },
  "method: a number": { call: () => createWebhookSender(js({ webhooks: URL_, method: 5 })), names: /method/ },
  "sharedSecret: a number": { call: () => createWebhookSender(js({ webhooks: URL_, sharedSecret: 5 })), names: /sharedSecret/ },
  "sharedSecret: a Symbol": { call: () => createWebhookSender(js({ webhooks: URL_, sharedSecret: Symbol("s") })), names: /sharedSecret/ },
  "sharedSecret: empty": { call: () => createWebhookSender({ webhooks: URL_, sharedSecret: "" }), names: /sharedSecret/ },
  "timeoutMs: -1": { call: () => createWebhookSender({ webhooks: URL_, timeoutMs: -1 }), names: /timeoutMs/ },
  "timeoutMs: NaN": { call: () => createWebhookSender({ webhooks: URL_, timeoutMs: Number.NaN }), names: /timeoutMs/ },
  "timeoutMs: a string": { call: () => createWebhookSender(js({ webhooks: URL_, timeoutMs: "5000" })), names: /timeoutMs/ },
  "timeoutMs: past Node's timers": { call: () => createWebhookSender({ webhooks: URL_, timeoutMs: PAST_TIMERS_MS }), names: /timeoutMs/ },
  "retryWindowMs: Infinity": { call: () => createWebhookSender({ webhooks: URL_, retryWindowMs: Number.POSITIVE_INFINITY }), names: /retryWindowMs/ },
  "retryWindowMs: -1": { call: () => createWebhookSender({ webhooks: URL_, retryWindowMs: -1 }), names: /retryWindowMs/ },
  "retryWindowMs: a string": { call: () => createWebhookSender(js({ webhooks: URL_, retryWindowMs: "1000" })), names: /retryWindowMs/ },
  "maxAttempts: 0": { call: () => createWebhookSender({ webhooks: URL_, maxAttempts: 0 }), names: /maxAttempts/ },
  "maxAttempts: 1.5": { call: () => createWebhookSender({ webhooks: URL_, maxAttempts: 1.5 }), names: /maxAttempts/ },
  "maxAttempts: a string": { call: () => createWebhookSender(js({ webhooks: URL_, maxAttempts: "3" })), names: /maxAttempts/ },
  "ca: a string": { call: () => createWebhookSender(js({ webhooks: URL_, ca: "ca.pem" })), names: /ca/ },
  "ca: [5]": { call: () => createWebhookSender(js({ webhooks: URL_, ca: [5] })), names: /ca\[0\]/ },
  "cwd: a number": { call: () => createWebhookSender(js({ webhooks: URL_, cwd: 5 })), names: /cwd/ },
  "env: a string": { call: () => createWebhookSender(js({ webhooks: URL_, env: "HTTPS_PROXY=x" })), names: /env/ },
  "clock: {}": { call: () => createWebhookSender(js({ webhooks: URL_, clock: {} })), names: /clock/ },
  "newId: a string": { call: () => createWebhookSender(js({ webhooks: URL_, newId: "m-1" })), names: /newId/ },
};

const sendRows: Record<string, Row> = {
  "no message": { call: () => sender.send(js(undefined)), names: /message/, refusal: InputError },
  null: { call: () => sender.send(js(null)), names: /message/, refusal: InputError },
  "a number": { call: () => sender.send(js(5)), names: /message/, refusal: InputError },
  "a cyclic property": { call: () => sender.send({ ...TRACK, properties: cyclic() }), names: /properties\.self: .*circular/, refusal: InputError },
  "a BigInt property": { call: () => sender.send({ ...TRACK, properties: { n: 10n } }), names: /properties\.n: .*BigInt/, refusal: InputError },
  "nesting 100,000 deep": { call: () => sender.send({ ...TRACK, properties: js(deep(100_000)) }), names: /properties.*nested deeper/, refusal: InputError },
  "null options": { call: () => sender.send(TRACK, js(null)), names: /options/ },
  "signal: a string": { call: () => sender.send(TRACK, js({ signal: "stop" })), names: /signal/ },
  "onEvent: a number": { call: () => sender.send(TRACK, js({ onEvent: 5 })), names: /onEvent/ },
};

const analyticsRows: Record<string, Row> = {
  "no options": { call: () => new Analytics(js(undefined)), names: /options/ },
  "null options": { call: () => new Analytics(js(null)), names: /options/ },
  "a write key instead of options": { call: () => new Analytics(js("wk")), names: /options/ },
  "{}": { call: () => new Analytics(js({})), names: /writeKey/ },
  "writeKey: a number": { call: () => new Analytics(js({ writeKey: 5, endpoint: URL_ })), names: /writeKey/ },
  "writeKey: a Symbol": { call: () => new Analytics(js({ writeKey: Symbol("wk"), endpoint: URL_ })), names: /writeKey/ },
  "endpoint: a number": { call: () => new Analytics(js({ writeKey: "wk", endpoint: 5 })), names: /endpoint/ },
  "endpoint: a cyclic object": { call: () => new Analytics(js({ writeKey: "wk", endpoint: cyclic() })), names: /endpoint/ },
  "host: a number": { call: () => new Analytics(js({ writeKey: "wk", host: 5 })), names: /host/ },
  "path: a number": { call: () => new Analytics(js({ writeKey: "wk", host: URL_, path: 5 })), names: /path/ },
  "flushAt: a string": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, flushAt: "20" })), names: /flushAt/ },
  "flushAt: 1.5": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, flushAt: 1.5 }), names: /flushAt/ },
  "flushAt: Infinity": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, flushAt: Number.POSITIVE_INFINITY }), names: /flushAt/ },
  "size: -1": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, size: -1 }), names: /size/ },
  "flushAfterMs: past Node's timers": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, flushAfterMs: PAST_TIMERS_MS }), names: /flushAfterMs/ },
  "flushInterval: NaN": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, flushInterval: Number.NaN }), names: /flushInterval/ },
  "maxAttempts: 0": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, maxAttempts: 0 }), names: /maxAttempts/ },
  "maxRetries: a string": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, maxRetries: "3" })), names: /maxRetries/ },
  "timeoutMs: Infinity": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, timeoutMs: Number.POSITIVE_INFINITY }), names: /timeoutMs/ },
  "httpRequestTimeout: -5": { call: () => new Analytics({ writeKey: "wk", endpoint: URL_, httpRequestTimeout: -5 }), names: /httpRequestTimeout/ },
  'debug: "yes"': { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, debug: "yes" })), names: /debug/ },
  "logger: a string": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, logger: "stderr" })), names: /logger/ },
  "transport: {}": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, transport: {} })), names: /transport/ },
  "clock: {}": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, clock: {} })), names: /clock/ },
  "signal: a string": { call: () => new Analytics(js({ writeKey: "wk", endpoint: URL_, signal: "stop" })), names: /signal/ },
};

const CALLS = ["identify", "track", "page", "screen", "group", "alias"] as const;
const VALID: Record<(typeof CALLS)[number], Record<string, unknown>> = {
  identify: { userId: "u1" },
  track: { userId: "u1", event: "E" },
  page: { userId: "u1" },
  screen: { userId: "u1" },
  group: { userId: "u1", groupId: "g1" },
  alias: { userId: "u1", previousId: "u0" },
};
const callRows: Record<string, Row> = Object.fromEntries(
  CALLS.flatMap((call) => {
    const made = (fields: unknown, callback?: unknown) => () => (analytics()[call] as (f: unknown, c?: unknown) => unknown)(fields, callback);
    return [
      [`${call}(): no fields`, { call: made(undefined), names: new RegExp(`${call}`) }],
      [`${call}(null)`, { call: made(null), names: new RegExp(`${call}`) }],
      [`${call}(a number)`, { call: made(5), names: new RegExp(`${call}`) }],
      [`${call}(a userId alone)`, { call: made("u1"), names: new RegExp(`${call}`) }],
      [`${call}: a cyclic context`, { call: made({ ...VALID[call], context: cyclic() }), names: /context\.self: .*circular/ }],
      [`${call}: a BigInt in context`, { call: made({ ...VALID[call], context: { n: 1n } }), names: /context\.n: .*BigInt/ }],
      [`${call}: an invalid Date`, { call: made({ ...VALID[call], timestamp: new Date(Number.NaN) }), names: /timestamp/ }],
      [`${call}: callback a number`, { call: made(VALID[call], 5), names: /callback/ }],
    ];
  }),
);

const clientCallRows: Record<string, Row> = {
  ...callRows,
  "enqueue(a number)": { call: () => analytics().enqueue(js(5), VALID.track), names: /type/ },
  'enqueue("bogus")': { call: () => analytics().enqueue("bogus", VALID.track), names: /type/ },
  "close(null)": { call: () => analytics().close(js(null)), names: /close/ },
  "close({ timeoutMs: -1 })": { call: () => analytics().close({ timeoutMs: -1 }), names: /timeoutMs/ },
  "close({ timeoutMs: a string })": { call: () => analytics().close(js({ timeoutMs: "5" })), names: /timeoutMs/ },
  "close({ timeoutMs: past Node's timers })": { call: () => analytics().close({ timeoutMs: PAST_TIMERS_MS }), names: /timeoutMs/ },
  "closeAndFlush(null)": { call: () => analytics().closeAndFlush(js(null)), names: /closeAndFlush/ },
  "closeAndFlush({ timeout: -1 })": { call: () => analytics().closeAndFlush({ timeout: -1 }), names: /timeout\b/ },
  "closeAndFlush({ timeout: Infinity })": { call: () => analytics().closeAndFlush({ timeout: Number.POSITIVE_INFINITY }), names: /timeout\b/ },
};

const debugRows: Record<string, Row> = {
  "a number": { call: () => wh.isDebugEnabled(js(5)), names: /DEBUG/ },
  "an object": { call: () => wh.isDebugEnabled(js({})), names: /DEBUG/ },
};

const SECRET = "s3cret";
const BODY = '{"type":"track"}';
const SIGNATURE = wh.signBody(SECRET, BODY);

const signingRows: Record<string, Row> = {
  "signBody: no secret": { call: () => wh.signBody(js(undefined), BODY), names: /secret/ },
  "signBody: a number body": { call: () => wh.signBody(SECRET, js(5)), names: /body/ },
  "verifySignature: a number secret": { call: () => wh.verifySignature(js(5), BODY, SIGNATURE), names: /secret/ },
  "verifySignature: no signature": { call: () => wh.verifySignature(SECRET, BODY, js(undefined)), names: /signature/ },
  "verifyBody: no body": { call: () => wh.verifyBody(SECRET, js(undefined), SIGNATURE), names: /body/ },
  "verifyBody: a number signature": { call: () => wh.verifyBody(SECRET, BODY, js(5)), names: /signature/ },
  "explainMismatch: no secret": { call: () => wh.explainMismatch(js(undefined), Buffer.from(BODY), SIGNATURE), names: /secret/ },
  "explainMismatch: a number signature": { call: () => wh.explainMismatch(SECRET, Buffer.from(BODY), js(5)), names: /signature/ },
};

const messageRows: Record<string, Row> = {
  "prepareMessage: no stamps": { call: () => wh.prepareMessage(TRACK, js(undefined)), names: /stamps/ },
  'prepareMessage: mode "bogus"': { call: () => wh.prepareMessage(TRACK, STAMPS, js({ mode: "bogus" })), names: /mode/ },
  "prepareMessage: a cyclic property": {
    call: () => wh.prepareMessage({ ...TRACK, properties: cyclic() }, STAMPS),
    names: /properties\.self/,
    refusal: "result",
  },
  "prepareMessage: a BigInt property": {
    call: () => wh.prepareMessage({ ...TRACK, properties: { n: 1n } }, STAMPS),
    names: /properties\.n/,
    refusal: "result",
  },
  "prepareLine: a number": { call: () => wh.prepareLine(js(5), STAMPS), names: /line/ },
  "checkRequiredFields: no message": { call: () => wh.checkRequiredFields(js(undefined)), names: /message/ },
  "isDestinationEnabled: a number": { call: () => wh.isDestinationEnabled(js(5)), names: /integrations/ },
};

const TARGET = { url: new URL(URL_), headers: {} };
const DELIVERY = { targets: [TARGET], transport: undefined as never, clock: wh.systemClock, policy: wh.DEFAULT_RETRY_POLICY, timeoutMs: 1_000, userAgent: "t" };

const deliveryRows: Record<string, Row> = {
  "deliverMessage: no options": { call: () => wh.deliverMessage(BODY, js(undefined)), names: /options/ },
  "deliverMessage: a number body": { call: () => wh.deliverMessage(js(5), { ...DELIVERY, transport }), names: /body/ },
  "deliverMessage: no transport": { call: () => wh.deliverMessage(BODY, DELIVERY), names: /transport/ },

  "deliverMessage: timeoutMs NaN": { call: () => wh.deliverMessage(BODY, { ...DELIVERY, transport, timeoutMs: Number.NaN }), names: /timeoutMs/ },
  "buildRequestHeaders: a number body": { call: () => wh.buildRequestHeaders(js(5), "t", undefined), names: /body/ },
  "buildRequestHeaders: a number secret": { call: () => wh.buildRequestHeaders(BODY, "t", js(5)), names: /sharedSecret/ },
  "classifyOutcome: no outcome": { call: () => wh.classifyOutcome(js(undefined)), names: /outcome/ },
  'classifyOutcome: statuses "bogus"': {
    call: () => wh.classifyOutcome({ kind: "response", status: 503, headers: {} } as never, js("bogus")),
    names: /statuses/,
  },
  "decideRetry: no input": { call: () => wh.decideRetry(js(undefined), wh.DEFAULT_RETRY_POLICY), names: /input/ },
  "decideRetry: no policy": {
    call: () => wh.decideRetry({ outcome: { kind: "response", status: 503 } as never, attempt: 1, firstAttemptAtMs: 0, nowMs: 0, random: 0 }, js(undefined)),
    names: /policy/,
  },
  "createUndiciTransport: null": { call: () => wh.createUndiciTransport(js(null)), names: /options/ },
  "createUndiciTransport: ca a string": { call: () => wh.createUndiciTransport(js({ ca: "PEM" })), names: /ca/ },
  "systemClock.sleep: a string": { call: () => wh.systemClock.sleep(js("5")), names: /ms/ },
  "systemClock.sleep: past Node's timers": { call: () => wh.systemClock.sleep(PAST_TIMERS_MS), names: /ms/ },
  "startReceiver: null": { call: () => wh.startReceiver(js(null)), names: /options/ },
  "startReceiver: port a string": { call: () => wh.startReceiver(js({ port: "x" })), names: /port/ },
  "parseConfig: a cyclic object": { call: () => wh.parseConfig(cyclic()), names: /self/, refusal: "result" },
  "parseConfig: a number": { call: () => wh.parseConfig(5), names: /object/, refusal: "result" },
};

const OPTIONS = { secret: SECRET };
const receiverRows: Record<string, Row> = {
  "verifyRequest: no input": { call: () => wh.verifyRequest(js(undefined)), names: /input|body/ },
  "verifyRequest: {}": { call: () => wh.verifyRequest(js({})), names: /body|secret/ },
  "verifyRequest: an empty secret": { call: () => wh.verifyRequest({ body: Buffer.from(BODY), headers: {}, secret: "" }), names: /secret/ },
  "verifyRequest: a number body": { call: () => wh.verifyRequest(js({ body: 5, headers: {}, secret: SECRET })), names: /body/ },
  "verifyRequest: no headers": { call: () => wh.verifyRequest(js({ body: Buffer.from(BODY), secret: SECRET })), names: /headers/ },
  "verifyNodeRequest: no request": { call: () => wh.verifyNodeRequest(js(undefined), OPTIONS), names: /request/ },
  "verifyNodeRequest: no options": { call: () => wh.verifyNodeRequest(js({}), js(undefined)), names: /secret|options/ },
  "verifyFetchRequest: a string request": { call: () => wh.verifyFetchRequest(js("http://x"), OPTIONS), names: /request/ },
  "verifyFetchRequest: no options": {
    call: () => wh.verifyFetchRequest(new Request(URL_, { method: "POST", body: BODY }), js(undefined)),
    names: /secret|options/,
  },
  "nodeWebhook: no options": { call: () => wh.nodeWebhook(js(undefined), () => undefined), names: /secret|options/ },
  "nodeWebhook: handler a string": { call: () => wh.nodeWebhook(OPTIONS, js("handler")), names: /handler/ },
  "expressWebhook: secret a number": { call: () => wh.expressWebhook(js({ secret: 5 })), names: /secret/ },
  "expressWebhook: maxBytes a string": { call: () => wh.expressWebhook(js({ secret: SECRET, maxBytes: "5" })), names: /maxBytes/ },
  "fastifyWebhook: null": { call: () => wh.fastifyWebhook(js(null)), names: /secret|options/ },
  "honoWebhook: maxBytes Infinity": { call: () => wh.honoWebhook({ secret: SECRET, maxBytes: Number.POSITIVE_INFINITY }), names: /maxBytes/ },
  "nextWebhook: handler missing": { call: () => wh.nextWebhook(OPTIONS, js(undefined)), names: /handler/ },
  "webhookOf: undefined": { call: () => wh.webhookOf(js(undefined)), names: /request/ },
};

const CATALOGUE: Record<string, Record<string, Row>> = {
  createWebhookSender: senderRows,
  "createWebhookSender().send": sendRows,
  Analytics: analyticsRows,
  "Analytics calls": clientCallRows,
  isDebugEnabled: debugRows,
  "signing (signBody, verifySignature, verifyBody, explainMismatch)": signingRows,
  "message rules (prepareMessage, prepareLine, checkRequiredFields, isDestinationEnabled)": messageRows,
  "delivery (deliverMessage, buildRequestHeaders, classifyOutcome, decideRetry, createUndiciTransport, systemClock, startReceiver, parseConfig)": deliveryRows,
  "receivers (verifyRequest, verify*Request, *Webhook, webhookOf)": receiverRows,
};

/** Exported values that take no input of their own: constants and wh's error classes, which only carry a message. */
const NOT_ENTRY_POINTS = [
  "AnalyticsError",
  "WhError",
  "UsageError",
  "ConfigError",
  "InputError",
  "WebhookRejection",
  "SIGNATURE_HEADER",
  "MESSAGE_TYPES",
  "MAX_MESSAGE_BYTES",
  "DESTINATION_NAME",
  "DEFAULT_RETRY_POLICY",
  "DEFAULT_MAX_BODY_BYTES",
  "VERSION",
  "USER_AGENT",
];

/** The call's error, or its result when it returned one (awaiting what it returns). */
async function outcomeOf(call: () => unknown): Promise<{ error: unknown } | { result: unknown }> {
  try {
    const result = await call();
    await (result as { close?: () => unknown } | undefined)?.close?.();
    return { result };
  } catch (error) {
    return { error };
  }
}

describe("the bad-input catalogue", () => {
  it("holds a row for every entry point src/index.ts exports", () => {
    const catalogued = Object.values(CATALOGUE)
      .flatMap((rows) => Object.entries(rows))
      .map(([name, row]) => `${name} ${row.call.toString()}`)
      .join("\n");
    const missing = Object.keys(wh).filter((name) => !NOT_ENTRY_POINTS.includes(name) && !new RegExp(`\\b${name}\\b`).test(catalogued));
    expect(missing).toEqual([]);
  });

  describe.each(Object.entries(CATALOGUE))("%s", (_, rows) => {
    it.each(Object.entries(rows))("refuses %s, naming it", async (_, { call, names, refusal = UsageError }) => {
      const outcome = await outcomeOf(call);
      if (refusal === "result") {
        expect(outcome).toMatchObject({ result: { ok: false } });
        const { result } = outcome as { result: { error?: string; issues?: string[] } };
        expect(result.error ?? result.issues?.join("\n")).toMatch(names);
        return;
      }
      expect(outcome).toHaveProperty("error");
      const { error } = outcome as { error: Error };
      expect(error, `${error?.name}: ${error?.message}`).toBeInstanceOf(refusal);
      expect(error.message).toMatch(names);
    });
  });
});
