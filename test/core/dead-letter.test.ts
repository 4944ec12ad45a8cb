import { describe, expect, it } from "vitest";
import { asDeadLetterRecord } from "../../src/core/dead-letter.js";

const record = { line: 3, outcome: "failed", reason: "HTTP 404", urls: [], at: "2026-11-21T09:30:08.276Z", original: '{"type":"track"}' };

describe("asDeadLetterRecord: exactly the keys wh writes", () => {
  it("takes a record with or without urls, and a spool record numbered 0", () => {
    expect(asDeadLetterRecord(record)).toBe(record);
    const { urls: _urls, ...withoutUrls } = record;
    expect(asDeadLetterRecord({ ...withoutUrls, line: 0, outcome: "invalid" })).toBeDefined();
  });

  it("refuses an extra key, a missing key, or a key of another type: an event is never one", () => {
    expect(asDeadLetterRecord({ ...record, type: "track" })).toBeUndefined();
    const { original: _original, ...missing } = record;
    expect(asDeadLetterRecord(missing)).toBeUndefined();
    expect(asDeadLetterRecord({ ...record, outcome: "delivered" })).toBeUndefined();
    expect(asDeadLetterRecord({ ...record, line: "3" })).toBeUndefined();
    expect(asDeadLetterRecord({ ...record, line: 1.5 })).toBeUndefined();
    expect(asDeadLetterRecord({ ...record, original: {} })).toBeUndefined();
    expect(asDeadLetterRecord({ ...record, urls: {} })).toBeUndefined();
    expect(asDeadLetterRecord([record])).toBeUndefined();
  });
});
