import { describe, expect, it } from "vitest";
import { MAX_WEBHOOKS, OWNED_HEADERS, parseConfig, parseWebhooks } from "../../src/config/schema.js";

const hook = (url = "https://hooks.example.com/in", headers?: Record<string, string>) => (headers === undefined ? { url } : { url, headers });
const issuesOf = (input: unknown): string[] => {
  const result = parseConfig(input);
  if (result.ok) throw new Error("expected the config to be refused");
  return result.issues;
};

describe("parseConfig: valid configurations", () => {
  it("parses a flat config", () => {
    const input = { webhooks: [hook("https://a.example.com/hook", { Authorization: "Bearer t" }), hook("http://127.0.0.1:8080/")], sharedSecret: "s3cret" };
    expect(parseConfig(input)).toEqual({ ok: true, value: input });
  });

  it("parses a config with sources", () => {
    const input = {
      sources: {
        web: { writeKey: "wk-1", enabled: true, webhooks: [hook()], sharedSecret: "s1" },
        ios: { enabled: false, webhooks: [hook("https://b.example.com/")] },
      },
    };
    expect(parseConfig(input)).toEqual({ ok: true, value: input });
  });

  it("parses exactly five webhooks", () => {
    expect(parseConfig({ webhooks: Array.from({ length: MAX_WEBHOOKS }, () => hook()) }).ok).toBe(true);
  });

  it("parses an ingest section", () => {
    const input = { ingest: { endpoint: "https://api.example.com", writeKey: "wk" } };
    expect(parseConfig(input)).toEqual({ ok: true, value: input });
  });

  it("treats an absent config as empty", () => {
    expect(parseConfig(undefined)).toEqual({ ok: true, value: {} });
    expect(parseConfig(null)).toEqual({ ok: true, value: {} });
  });
});

describe("parseConfig: each problem as path: problem", () => {
  it("refuses six webhooks at webhooks[5]", () => {
    expect(issuesOf({ webhooks: Array.from({ length: 6 }, () => hook()) })).toEqual(["webhooks[5]: 6 webhooks given; at most 5 are allowed"]);
  });

  it("refuses zero webhooks", () => {
    expect(issuesOf({ webhooks: [] })).toEqual(["webhooks: at least one webhook URL is required"]);
  });

  it("refuses a relative URL", () => {
    expect(issuesOf({ webhooks: [hook("/hook")] })).toEqual(['webhooks[0].url: "/hook" is not an absolute URL (give the whole URL, with http:// or https://)']);
  });

  it("refuses an ftp:// URL", () => {
    expect(issuesOf({ webhooks: [hook("ftp://files.example.com/in")] })).toEqual(['webhooks[0].url: "ftp://files.example.com/in" is not an http or https URL']);
  });

  it("refuses a header name with a space", () => {
    expect(issuesOf({ webhooks: [hook(undefined, { "X Team": "growth" })] })).toEqual(['webhooks[0].headers["X Team"]: "X Team" is not a valid header name']);
  });

  const CONTROL = "control characters other than tab (CR, LF, NUL, ESC, DEL, …) are not allowed";
  it.each([
    ["CR LF", "a\r\nX-Injected: 1", "U+000D"],
    ["NUL", "a\0b", "U+0000"],
    ["a lone LF", "a\nb", "U+000A"],
    ["a BEL", "a\u0007b", "U+0007"],
    ["an ESC", "\u001b[2J", "U+001B"],
    ["a DEL", "a\u007fb", "U+007F"],
  ])("refuses a header value with %s, naming the character", (_label, value, code) => {
    expect(issuesOf({ webhooks: [hook(undefined, { "X-Team": value })] })).toEqual([
      `webhooks[0].headers["X-Team"]: header value must not contain ${code}: ${CONTROL}`,
    ]);
  });

  it.each([
    ["a euro sign", "5 €", "U+20AC"],
    ["an emoji", "ok 😀", "U+1F600"],
  ])("refuses a header value with %s, which HTTP cannot carry", (_label, value, code) => {
    expect(issuesOf({ webhooks: [hook(undefined, { "X-Team": value })] })).toEqual([
      `webhooks[0].headers["X-Team"]: header value must not contain ${code}: a header value holds bytes up to U+00FF (percent-encode the text)`,
    ]);
  });

  it("accepts a tab and Latin-1 letters in a header value", () => {
    expect(parseConfig({ webhooks: [hook(undefined, { "X-Team": "a\tb", "X-City": "Zürich" })] }).ok).toBe(true);
  });

  it("owns exactly the headers wh sets, Standard Webhooks' three among them", () => {
    expect(OWNED_HEADERS).toEqual([
      "content-type",
      "content-length",
      "host",
      "transfer-encoding",
      "user-agent",
      "x-signature",
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature",
      "connection",
    ]);
  });

  it.each([
    ["content-type", 'webhooks[0].headers["content-type"]: content-type is set by wh and cannot be configured'],
    ["Content-Type", 'webhooks[0].headers["Content-Type"]: Content-Type is set by wh and cannot be configured'],
    ["content-length", 'webhooks[0].headers["content-length"]: content-length is set by wh and cannot be configured'],
    ["Host", "webhooks[0].headers.Host: Host is set by wh and cannot be configured"],
    ["Transfer-Encoding", 'webhooks[0].headers["Transfer-Encoding"]: Transfer-Encoding is set by wh and cannot be configured'],
    ["USER-AGENT", 'webhooks[0].headers["USER-AGENT"]: USER-AGENT is set by wh and cannot be configured'],
    ["X-Signature", 'webhooks[0].headers["X-Signature"]: X-Signature is set by wh and cannot be configured'],
    ["x-signature", 'webhooks[0].headers["x-signature"]: x-signature is set by wh and cannot be configured'],
    ["Connection", "webhooks[0].headers.Connection: Connection is set by wh and cannot be configured"],
    ["webhook-id", 'webhooks[0].headers["webhook-id"]: webhook-id is set by wh and cannot be configured'],
    ["Webhook-Timestamp", 'webhooks[0].headers["Webhook-Timestamp"]: Webhook-Timestamp is set by wh and cannot be configured'],
    ["webhook-signature", 'webhooks[0].headers["webhook-signature"]: webhook-signature is set by wh and cannot be configured'],
  ])("refuses the owned header %s", (name, issue) => {
    expect(issuesOf({ webhooks: [hook(undefined, { [name]: "x" })] })).toEqual([issue]);
  });

  it("refuses an unknown top-level key", () => {
    expect(issuesOf({ webhooks: [hook()], webhook: [] })).toEqual(["webhook: unknown key"]);
  });

  it("refuses an unknown key in a webhook, at its path", () => {
    expect(issuesOf({ webhooks: [{ url: "https://a.example.com/", method: "PUT" }] })).toEqual(["webhooks[0].method: unknown key"]);
  });

  it("refuses an empty sharedSecret", () => {
    expect(issuesOf({ webhooks: [hook()], sharedSecret: "" })).toEqual(["sharedSecret: must not be empty"]);
  });

  it("refuses sources together with top-level webhooks", () => {
    expect(issuesOf({ webhooks: [hook()], sources: { web: { webhooks: [hook()] } } })).toEqual([
      "sources: use either sources or the top-level webhooks/sharedSecret, not both",
    ]);
  });

  it("refuses sources together with a top-level sharedSecret", () => {
    expect(issuesOf({ sharedSecret: "s", sources: { web: { webhooks: [hook()] } } })).toEqual([
      "sources: use either sources or the top-level webhooks/sharedSecret, not both",
    ]);
  });

  it("gives a source's problems its path", () => {
    expect(issuesOf({ sources: { web: { webhooks: [hook("mailto:a@b.c")], sharedSecret: "" } } })).toEqual([
      'sources.web.webhooks[0].url: "mailto:a@b.c" is not an http or https URL',
      "sources.web.sharedSecret: must not be empty",
    ]);
  });

  it("refuses webhooks that are not a list", () => {
    expect(issuesOf({ webhooks: "https://a.example.com/" })).toEqual(["webhooks: Invalid input: expected array, received string"]);
  });

  it("reports several problems at once", () => {
    const input = {
      webhooks: [hook("/rel"), hook(undefined, { "X Bad": "1", Host: "h", "X-A": "a\r\nb" }), hook(), hook(), hook(), hook()],
      sharedSecret: "",
      extra: true,
    };
    expect(issuesOf(input)).toEqual([
      'webhooks[0].url: "/rel" is not an absolute URL (give the whole URL, with http:// or https://)',
      'webhooks[1].headers["X Bad"]: "X Bad" is not a valid header name',
      "webhooks[1].headers.Host: Host is set by wh and cannot be configured",
      'webhooks[1].headers["X-A"]: header value must not contain U+000D: control characters other than tab (CR, LF, NUL, ESC, DEL, …) are not allowed',
      "webhooks[5]: 6 webhooks given; at most 5 are allowed",
      "sharedSecret: must not be empty",
      "extra: unknown key",
    ]);
  });
});

describe("parseWebhooks", () => {
  it("applies the file's rules to URLs from the command line", () => {
    expect(parseWebhooks([hook()])).toEqual({ ok: true, value: [hook()] });
    expect(parseWebhooks([hook("example.com/hook")])).toEqual({
      ok: false,
      issues: ['[0].url: "example.com/hook" is not an absolute URL (give the whole URL, with http:// or https://)'],
    });
  });
});

describe("parseConfig: wh serve's queue", () => {
  it("takes a redis:// or rediss:// URL and refuses anything else, naming the key", () => {
    expect(parseConfig({ queue: "redis://:pw@127.0.0.1:6379/2" })).toMatchObject({ ok: true, value: { queue: "redis://:pw@127.0.0.1:6379/2" } });
    expect(parseConfig({ queue: "rediss://redis.example.com:6380" }).ok).toBe(true);
    expect(issuesOf({ queue: "http://127.0.0.1:6379" })).toEqual([
      'queue: "http://127.0.0.1:6379/": expected a redis:// or rediss:// URL, such as redis://127.0.0.1:6379/0',
    ]);
    expect(issuesOf({ queue: 6379 })).toEqual(["queue: Invalid input: expected string, received number"]);
  });

  it("refuses a database that is not a number and a URL without a host, with the password masked", () => {
    expect(issuesOf({ queue: "redis://:pw@127.0.0.1:6379/notanumber" })).toEqual([
      'queue: "redis://:***@127.0.0.1:6379/notanumber": the database "notanumber" is not a number (the path is the database index, such as /0)',
    ]);
    expect(issuesOf({ queue: "redis:///0" })).toEqual(['queue: "redis:///0": no host (expected redis://host:port/db, such as redis://127.0.0.1:6379/0)']);
  });
});

describe("parseConfig: sources wh serve can route", () => {
  it("refuses two sources with the same writeKey, naming both and not the key", () => {
    const issues = issuesOf({
      sources: { web: { writeKey: "wk-1", webhooks: [hook()] }, ios: { writeKey: "wk-1", webhooks: [hook()] }, tv: { writeKey: "wk-1", webhooks: [hook()] } },
    });
    expect(issues).toEqual([
      "sources.ios.writeKey: the same writeKey as sources.web (wh serve routes requests by write key: each source needs its own)",
      "sources.tv.writeKey: the same writeKey as sources.web (wh serve routes requests by write key: each source needs its own)",
    ]);
  });

  it("refuses an empty sources", () => {
    expect(issuesOf({ sources: {} })).toEqual(["sources: no sources: define at least one, or leave sources out"]);
  });

  it("accepts sources without a writeKey (wh send --source and a delete's fan-out need none)", () => {
    expect(parseConfig({ sources: { web: { webhooks: [hook()] }, ios: { webhooks: [hook()] } } }).ok).toBe(true);
  });
});
