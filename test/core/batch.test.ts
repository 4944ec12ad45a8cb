import { describe, expect, it } from "vitest";
import { batchBody, fitsInBatch, MAX_BATCH_BYTES } from "../../src/core/batch.js";

const SENT_AT = "2026-11-21T09:30:08.276Z";

/** A serialised message of exactly `bytes` bytes: {"p":"xxx…"} is 8 bytes around its padding. */
function messageOfBytes(bytes: number, fill = "x"): string {
  const fillBytes = Buffer.byteLength(fill);
  const padding = bytes - 8;
  if (padding < 0 || padding % fillBytes !== 0) throw new Error(`cannot make ${bytes} bytes of ${fill}`);
  const json = `{"p":"${fill.repeat(padding / fillBytes)}"}`;
  expect(Buffer.byteLength(json)).toBe(bytes);
  return json;
}

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

describe("batchBody", () => {
  it("joins the serialised messages into the batch request body, exactly", () => {
    expect(batchBody(['{"type":"track","event":"A"}', '{"type":"identify"}'], SENT_AT)).toBe(
      '{"batch":[{"type":"track","event":"A"},{"type":"identify"}],"sentAt":"2026-11-21T09:30:08.276Z"}',
    );
  });

  it("writes an empty batch as an empty array", () => {
    expect(batchBody([], SENT_AT)).toBe('{"batch":[],"sentAt":"2026-11-21T09:30:08.276Z"}');
  });

  it("produces JSON that parses back to the messages", () => {
    const body = batchBody(['{"a":1}', '{"b":"é"}'], SENT_AT);
    expect(JSON.parse(body)).toEqual({ batch: [{ a: 1 }, { b: "é" }], sentAt: SENT_AT });
  });
});

describe("fitsInBatch", () => {
  const overhead = Buffer.byteLength(batchBody([], SENT_AT));

  it("says the limit is 500,000 bytes", () => {
    expect(MAX_BATCH_BYTES).toBe(500_000);
  });

  it("lets a first message fill the body to exactly 500,000 bytes and not one byte more", () => {
    const exact = messageOfBytes(MAX_BATCH_BYTES - overhead);
    expect(Buffer.byteLength(batchBody([exact], SENT_AT))).toBe(500_000);
    expect(fitsInBatch(0, 0, Buffer.byteLength(exact))).toBe(true);

    const over = messageOfBytes(MAX_BATCH_BYTES - overhead + 1);
    expect(Buffer.byteLength(batchBody([over], SENT_AT))).toBe(500_001);
    expect(fitsInBatch(0, 0, Buffer.byteLength(over))).toBe(false);
  });

  it("counts the commas between messages at the exact edge", () => {
    const queued = [messageOfBytes(30_000), messageOfBytes(31_234), messageOfBytes(29_876)];
    const queuedBytes = sum(queued.map((json) => Buffer.byteLength(json)));
    // What is left for one more message once the body, the messages and their commas are counted.
    const room = MAX_BATCH_BYTES - Buffer.byteLength(batchBody(queued, SENT_AT)) - 1;

    const last = messageOfBytes(room);
    expect(Buffer.byteLength(batchBody([...queued, last], SENT_AT))).toBe(500_000);
    expect(fitsInBatch(queued.length, queuedBytes, Buffer.byteLength(last))).toBe(true);

    const oneMore = messageOfBytes(room + 1);
    expect(Buffer.byteLength(batchBody([...queued, oneMore], SENT_AT))).toBe(500_001);
    expect(fitsInBatch(queued.length, queuedBytes, Buffer.byteLength(oneMore))).toBe(false);
  });

  it("counts bytes, not characters, of multi-byte messages at the edge", () => {
    const queued = [messageOfBytes(100_000, "é"), messageOfBytes(200_000, "€".repeat(2))];
    const queuedBytes = sum(queued.map((json) => Buffer.byteLength(json)));
    const room = MAX_BATCH_BYTES - Buffer.byteLength(batchBody(queued, SENT_AT)) - 1;
    const fill = room % 2 === 0 ? "é" : "x";
    const last = messageOfBytes(room, fill);
    expect(last.length).toBeLessThanOrEqual(room);
    expect(Buffer.byteLength(batchBody([...queued, last], SENT_AT))).toBe(500_000);
    expect(fitsInBatch(queued.length, queuedBytes, Buffer.byteLength(last))).toBe(true);
    expect(fitsInBatch(queued.length, queuedBytes, Buffer.byteLength(last) + 1)).toBe(false);
  });

  it("accepts small messages into a batch that is far from the limit", () => {
    expect(fitsInBatch(19, 19 * 200, 200)).toBe(true);
  });
});
