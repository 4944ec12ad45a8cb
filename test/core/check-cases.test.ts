import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CASE_NAMES } from "../../src/core/check/case-names.js";
import { buildCases, CHECK_CASES, type CheckSettings } from "../../src/core/check/cases.js";
import { gradeCase, summarize } from "../../src/core/check/grade.js";
import { junitXml } from "../../src/core/check/junit.js";
import { MAX_MESSAGE_BYTES } from "../../src/core/message/rules.js";
import { parseXml } from "../cli/commands/junit-check.js";

const SECRET = "s3cret";

function settings(overrides: Partial<CheckSettings> = {}): CheckSettings {
  let id = 0;
  const now = new Date("2026-11-21T09:30:08.276Z");
  return {
    mode: "classic",
    scheme: "segment",
    secret: SECRET,
    nowMs: now.getTime(),
    userAgent: "wh/test",
    batchSize: 3,
    concurrency: 10,
    stamps: { now: () => now, newId: () => `id-${++id}` },
    ...overrides,
  };
}

function built(name: string, overrides: Partial<CheckSettings> = {}) {
  const [one] = buildCases(new Set(CASE_NAMES.filter((each) => each === name)), settings(overrides));
  if (one === undefined) throw new Error(`no case ${name}`);
  return one;
}

const hmac = (text: string) => createHmac("sha1", SECRET).update(text).digest("hex");

describe("wh check's cases", () => {
  it("are all in docs/check.md's table, each required or advisory as defined", () => {
    const section = readFileSync(new URL("../../docs/check.md", import.meta.url), "utf8");
    for (const definition of CHECK_CASES) {
      const row = section.split("\n").find((line) => line.startsWith("| ") && line.split("|")[1]?.includes(`\`${definition.name}\``));
      expect(row, definition.name).toBeDefined();
      expect(row?.trim().endsWith(`| ${definition.required ? "required" : "advisory"} |`), definition.name).toBe(true);
    }
  });

  it("unicode: the bytes Segment writes, JSON.stringify's own, signed over them", () => {
    const unicode = built("unicode");
    const [request] = unicode.requests;
    expect(request?.body).toBe(JSON.stringify(JSON.parse(request?.body ?? "")));
    expect(request?.body).toContain("東京");
    expect(request?.body).toContain("https://example.com/menu/desserts?ref=a/b");
    expect(request?.headers["X-Signature"]).toBe(hmac(request?.body ?? ""));
    expect(unicode.probe).toBeUndefined();
  });

  it("unicode-escaped: other encoders' escapes, the same JSON, signed over the exact bytes; the probe is JSON.stringify's bytes", () => {
    const escaped = built("unicode-escaped");
    const [request] = escaped.requests;
    expect(escaped.definition.required).toBe(false);
    expect(request?.body).toContain("https:\\/\\/example.com");
    expect(request?.body).toContain("\\u003cb\\u003e");
    expect(request?.headers["X-Signature"]).toBe(hmac(request?.body ?? ""));
    expect(escaped.probe?.request.body).toBe(JSON.stringify(JSON.parse(request?.body ?? "")));
    expect(escaped.probe?.request.headers["X-Signature"]).toBe(hmac(escaped.probe?.request.body ?? ""));
    expect(built("unicode-escaped", { secret: undefined }).skip).toContain("no shared secret given");
  });

  it("large-event comes just under the 32 KB limit", () => {
    const bytes = Buffer.byteLength(built("large-event").requests[0]?.body ?? "");
    expect(bytes).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(bytes).toBeGreaterThan(MAX_MESSAGE_BYTES - 100);
  });

  it("batch: a JSON array signed over its first event, in actions mode only", () => {
    const [request] = built("batch", { mode: "actions", batchSize: 4 }).requests;
    const events = JSON.parse(request?.body ?? "") as unknown[];
    expect(events).toHaveLength(4);
    expect(request?.headers["X-Signature"]).toBe(hmac(JSON.stringify(events[0])));
    // Sent when the batch is refused: accepted, it shows the receiver verifies the whole body.
    const { probe } = built("batch", { mode: "actions" });
    expect(probe?.request.headers["X-Signature"]).toBe(hmac(probe?.request.body ?? ""));
    expect(built("batch").skip).toBe("the classic destination never sends batches (--mode actions)");
  });

  it("signature-reserialized signs the same JSON spaced otherwise; signature-body-changed signs the body before its change", () => {
    const [reserialized] = built("signature-reserialized").requests;
    expect(reserialized?.headers["X-Signature"]).toBe(hmac(JSON.stringify(JSON.parse(reserialized?.body ?? ""), null, 2)));
    const [changed] = built("signature-body-changed").requests;
    expect(changed?.body).toContain('"total":9950');
    expect(changed?.headers["X-Signature"]).toBe(hmac((changed?.body ?? "").replace('"total":9950', '"total":99.5')));
  });

  it("a refuse case that got a 5xx crashed; an accept case that got a redirect lost the event", () => {
    const crashed = gradeCase(built("signature-wrong"), [{ outcome: { kind: "response", status: 503, body: "down" }, ms: 3 }], undefined, 5_000);
    expect(crashed).toMatchObject({ outcome: "fail", status: 503 });
    expect(crashed.reason).toContain("crashed instead of refusing (HTTP 503: down)");
    const moved = gradeCase(built("track"), [{ outcome: { kind: "response", status: 301, location: "https://x/" }, ms: 3 }], undefined, 5_000);
    expect(moved.reason).toBe("answered HTTP 301 to https://x/: Segment does not follow redirects: the event would be lost");
  });

  it("JUnit XML holds what XML cannot hold as visible escapes, and parses", () => {
    const result = gradeCase(built("track"), [{ outcome: { kind: "error", code: "other", message: "bad \u0001 <thing> & \ud800" }, ms: 1 }], undefined, 5_000);
    const xml = junitXml([result], summarize([result]), { url: "http://127.0.0.1/hook", mode: "classic", totalMs: 1 });
    const suite = parseXml(xml).children[0];
    const failure = suite?.children[0]?.children[0];
    expect(failure?.name).toBe("failure");
    expect(failure?.attributes.message).toBe("no answer: bad \\x01 <thing> & \\ud800");
  });
});
