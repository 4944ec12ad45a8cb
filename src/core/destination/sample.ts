import { createHash } from "node:crypto";

/**
 * A sample on a field (`path`): the same events every time, and a sample at 30% a subset of one at
 * 60%. This is @segment/tsub's sampleConsistentPercent (transformers.ts, after segmentio/sampler's
 * sampler.go): the MD5 of the field's JSON made a number in [0, 1) by Campbell's random_real, kept
 * when below `percent`. tsub 2.0.1's own keeps every event whatever the percent: its MD5
 * (tiny-hashes) returns hex text where it reads bytes, its refill after leading zeros takes 64 - n
 * bits where the Go shift takes n, and the @stdlib ldexp 0.0.5 installed with it answers 0 for
 * ldexp(2^63, -64). Here the digest is bytes and the arithmetic the Go original's.
 */
export function keptBySample(value: unknown, percent: number): boolean {
  if (percent <= 0) return false;
  if (percent >= 1) return true;
  const digest = createHash("md5")
    .update(JSON.stringify(value) ?? "undefined")
    .digest();
  let significand = digest.readBigUInt64BE(0);
  let exponent = -64;
  const leadingZeros = significand === 0n ? 64 : 64 - significand.toString(2).length;
  if (leadingZeros !== 0) {
    // tsub refills from bytes 9 to 15 (byte 8 is skipped; the 8th byte it reads is past the end: 0).
    const refill = Buffer.concat([digest.subarray(9, 16), Buffer.alloc(1)]).readBigUInt64BE(0);
    exponent -= leadingZeros;
    significand = BigInt.asUintN(64, (significand << BigInt(leadingZeros)) | (refill >> BigInt(64 - leadingZeros)));
  }
  // The lowest bit flipped: the number is never 0.
  significand ^= 1n;
  return Number(significand) * 2 ** exponent < percent;
}
