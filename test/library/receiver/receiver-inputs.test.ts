import { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import {
  expressWebhook,
  fastifyWebhook,
  honoWebhook,
  nextWebhook,
  nodeWebhook,
  signBody,
  UsageError,
  verifyFetchRequest,
  verifyNodeRequest,
  verifyRequest,
  webhookOf,
} from "../../../src/index.js";

// The receiver entry points called from plain JavaScript with what TypeScript would have refused:
// each throws a UsageError naming the setting, when called or made, never a TypeError from deep
// inside, never at the first request, and never by ignoring the setting.

const SECRET = "whsec-inputs";
const EVENT = '{"type":"track","event":"A"}';
const HEADERS = { "x-signature": signBody(SECRET, EVENT) };

/** Calls as plain JavaScript makes them: any value in any place. */
type Loose = (...args: unknown[]) => unknown;
const loose = (fn: unknown) => fn as Loose;
const handler = () => new Response();

/** Every adapter, made with the options given. */
const MAKERS: Record<string, (options: unknown) => unknown> = {
  nodeWebhook: (options) => loose(nodeWebhook)(options, () => undefined),
  expressWebhook: (options) => loose(expressWebhook)(options),
  fastifyWebhook: (options) => loose(fastifyWebhook)(options),
  honoWebhook: (options) => loose(honoWebhook)(options),
  nextWebhook: (options) => loose(nextWebhook)(options, handler),
  verifyNodeRequest: (options) => loose(verifyNodeRequest)(new IncomingMessage(new Socket()), options),
  verifyFetchRequest: (options) => loose(verifyFetchRequest)(new Request("http://x/", { method: "POST", body: EVENT }), options),
};

/** Bad options, and what the UsageError says. */
const BAD_OPTIONS: [string, unknown, string | RegExp][] = [
  ["no options", undefined, "webhook options must be an object { secret, maxBytes, batches, scheme, toleranceSeconds } (got undefined)"],
  ["null", null, "(got null)"],
  ["a string", SECRET, "(got a string)"],
  ["a number", 5, "(got number 5)"],
  ["an array", [SECRET], "(got an array)"],
  ["no secret", {}, "secret is missing or empty"],
  ["an undefined secret", { secret: undefined }, "secret is missing or empty"],
  ["a null secret", { secret: null }, "secret is missing or empty"],
  ["an empty secret", { secret: "" }, "secret is missing or empty"],
  ["a number secret", { secret: 123 }, "secret must be a string, the destination's shared secret (got number 123)"],
  ["an object secret", { secret: { value: SECRET } }, "secret must be a string, the destination's shared secret (got an object)"],
  ["a zero maxBytes", { secret: SECRET, maxBytes: 0 }, "maxBytes must be a positive whole number of bytes (got number 0)"],
  ["a negative maxBytes", { secret: SECRET, maxBytes: -1 }, "maxBytes must be a positive whole number of bytes (got number -1)"],
  ["a fractional maxBytes", { secret: SECRET, maxBytes: 1.5 }, "(got number 1.5)"],
  ["a NaN maxBytes", { secret: SECRET, maxBytes: Number.NaN }, "(got number NaN)"],
  ["an infinite maxBytes", { secret: SECRET, maxBytes: Number.POSITIVE_INFINITY }, "(got number Infinity)"],
  ["a string maxBytes", { secret: SECRET, maxBytes: "5000" }, "maxBytes must be a positive whole number of bytes (got a string)"],
  ["a null maxBytes", { secret: SECRET, maxBytes: null }, "maxBytes must be a positive whole number of bytes (got null)"],
  ["a string batches", { secret: SECRET, batches: "true" }, "batches must be true or false (got a string)"],
  ["a number batches", { secret: SECRET, batches: 1 }, "batches must be true or false (got number 1)"],
  ["a null batches", { secret: SECRET, batches: null }, "batches must be true or false (got null)"],
  [
    "a misspelt setting",
    { secret: SECRET, maxBodyBytes: 1000 },
    'unknown webhook options setting "maxBodyBytes": the settings are secret, maxBytes, batches, scheme, toleranceSeconds',
  ],
  ["a misspelt batches", { secret: SECRET, batch: true }, 'unknown webhook options setting "batch"'],
];

describe.each(Object.keys(MAKERS))("%s from plain JavaScript", (name) => {
  const make = MAKERS[name] as (options: unknown) => unknown;

  it.each(BAD_OPTIONS)("refuses %s with a UsageError naming it", async (_, options, message) => {
    // The verify functions are async: theirs is a rejection, before the request is read.
    const attempt = async () => make(options);
    await expect(attempt()).rejects.toThrow(UsageError);
    await expect(attempt()).rejects.toThrow(message);
  });
});

describe("the receivers' other arguments from plain JavaScript", () => {
  it("nodeWebhook and nextWebhook refuse a missing handler when made, not at the first request", () => {
    for (const bad of [undefined, null, "handler", {}]) {
      expect(() => loose(nodeWebhook)({ secret: SECRET }, bad)).toThrow(UsageError);
      expect(() => loose(nextWebhook)({ secret: SECRET }, bad)).toThrow(/^nextWebhook needs a handler function as its second argument/);
    }
    expect(() => loose(nodeWebhook)({ secret: SECRET })).toThrow("nodeWebhook needs a handler function as its second argument (got undefined)");
  });

  it("verifyNodeRequest and verifyFetchRequest refuse what is not a request", async () => {
    for (const bad of [undefined, null, "http://x/", {}, { headers: {} }]) {
      await expect(loose(verifyNodeRequest)(bad, { secret: SECRET })).rejects.toThrow(/^request must be a node:http IncomingMessage/);
      await expect(loose(verifyFetchRequest)(bad, { secret: SECRET })).rejects.toThrow(/^request must be a fetch Request/);
    }
  });

  it("webhookOf refuses what no adapter verified, a primitive included", () => {
    for (const bad of [undefined, null, "request", 5, {}]) expect(() => loose(webhookOf)(bad)).toThrow(UsageError);
  });

  it("verifyRequest refuses a bad input, body, headers, secret or batches, naming it", () => {
    const verify = (input: unknown) => () => loose(verifyRequest)(input);
    const good = { body: EVENT, headers: HEADERS, secret: SECRET };
    const cases: [unknown, string][] = [
      [undefined, "verifyRequest input must be an object { body, headers, secret, batches, scheme, toleranceSeconds } (got undefined)"],
      [null, "verifyRequest input must be an object"],
      [EVENT, "verifyRequest input must be an object"],
      [{}, "body must be the raw body as it arrived, a string or a Uint8Array (got undefined)"],
      [{ ...good, body: null }, "body must be the raw body as it arrived, a string or a Uint8Array (got null)"],
      [{ ...good, body: JSON.parse(EVENT) }, "(got an object)"],
      [{ ...good, body: 42 }, "(got number 42)"],
      [{ ...good, body: new ArrayBuffer(4) }, "(got an object)"],
      [{ ...good, headers: undefined }, "headers must be a Headers or an object of header values by name (got undefined)"],
      [{ ...good, headers: null }, "headers must be a Headers or an object of header values by name (got null)"],
      [{ ...good, headers: Object.entries(HEADERS) }, "(got an array)"],
      [{ ...good, headers: "x-signature: abc" }, "(got a string)"],
      [{ ...good, secret: undefined }, "secret is missing or empty"],
      [{ ...good, secret: "" }, "secret is missing or empty"],
      [{ ...good, secret: 7 }, "secret must be a string"],
      [{ ...good, batches: "yes" }, "batches must be true or false (got a string)"],
      [{ ...good, maxBytes: 10 }, 'unknown verifyRequest input setting "maxBytes": the settings are body, headers, secret, batches, scheme, toleranceSeconds'],
    ];
    for (const [input, message] of cases) {
      expect(verify(input)).toThrow(UsageError);
      expect(verify(input)).toThrow(message);
    }
    expect(verifyRequest(good)).toMatchObject({ ok: true });
  });
});
