/**
 * A seeded pseudo-random stream (the mulberry32 construction: a 32-bit state advanced by a
 * constant, then mixed by multiplications and xor-shifts). Not for secrets: it exists so the
 * same seed gives the same generated traffic, byte for byte, on every machine.
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let mixed = this.state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A whole number from min to max, both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** A wait whose mean is `meanMs`: exponential, as the gaps between independent arrivals are. */
  wait(meanMs: number): number {
    return Math.round(-Math.log(1 - this.next()) * meanMs);
  }

  /** A UUID of version 4's shape, from the stream (so a seeded run repeats its messageIds). */
  uuid(): string {
    const hex = Array.from({ length: 4 }, () =>
      Math.floor(this.next() * 4_294_967_296)
        .toString(16)
        .padStart(8, "0"),
    ).join("");
    const variant = "89ab"[Number.parseInt(hex[16] as string, 16) & 3];
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }
}
