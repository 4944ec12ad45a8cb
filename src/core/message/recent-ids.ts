/**
 * The messageIds seen lately, to drop a retried request's events: a window of the last `size`
 * ids, the oldest forgotten first. What is kept of an id is a 64-bit digest, not the string: a
 * ring of digests in arrival order (8 bytes an id) and an open-addressed table of ring positions
 * (4 bytes a slot, at most half full: 8-16 bytes an id), 16-32 bytes an id against 276 for a Set
 * of the strings beside an array of them (`node bench/recent-ids.js`). Both grow as ids come, by
 * doubling: --dedup-window may be 10,000,000 for a serve that sees a few thousand events. Two
 * different ids share a digest with a chance of about 2^-64 each pair (the seeds are random per
 * window): a window of 10,000,000 drops a new event as a duplicate about once in 10^12 events.
 */
export class RecentIds {
  /** Each id's digest, two 32-bit halves, by its place in arrival order. */
  private ring = new Uint32Array(0);
  /** Ring positions + 1 by the digest's low half (0: an empty slot), probed linearly. */
  private table = new Uint32Array(0);
  private count = 0;
  /** The ring position the next id takes once the ring is full: the oldest id's. */
  private next = 0;
  private readonly seeds = [(Math.random() * 2 ** 32) >>> 0, (Math.random() * 2 ** 32) >>> 0] as const;
  private high = 0;
  private low = 0;

  constructor(private readonly size: number) {}

  has(id: string): boolean {
    this.digest(id);
    return this.find() !== -1;
  }

  add(id: string): void {
    this.digest(id);
    this.addDigest();
  }

  /**
   * Whether an id of a request being accepted is new: neither in the window nor given earlier in
   * the same request (`batch`), which a new one joins. Digested once here, its digest is what
   * remember adds: no second digest, and no Set of the request's strings.
   */
  fresh(id: string, batch: RecentBatch): boolean {
    // has() leaves the id's digest in high and low.
    return !this.has(id) && batch.join(this.high, this.low);
  }

  /** Adds a request's new ids (those fresh said were) to the window, once the request is stored. */
  remember(batch: RecentBatch): void {
    for (let index = 0; index < batch.count; index += 1) {
      this.high = batch.digests[index * 2] as number;
      this.low = batch.digests[index * 2 + 1] as number;
      this.addDigest();
    }
  }

  /** Adds the current digest, unless the window holds it already. */
  private addDigest(): void {
    if (this.size === 0) return;
    if (this.find() !== -1) return;
    let position = this.next;
    if (this.count < this.size) {
      if (this.count * 2 === this.ring.length) this.grow();
      position = this.count;
      this.count += 1;
    } else {
      this.forget(position);
      this.next = (position + 1) % this.size;
    }
    this.ring[position * 2] = this.high;
    this.ring[position * 2 + 1] = this.low;
    this.insert(position);
  }

  /**
   * The id's digest into high and low: two 32-bit MurmurHash3-style hashes of its UTF-16 code
   * units, differently seeded, taken two units (32 bits) a round: half the rounds of one a unit,
   * on accept's hot path (each event's messageId is digested).
   */
  private digest(id: string): void {
    let high = this.seeds[0] ^ id.length;
    let low = this.seeds[1];
    for (let index = 0; index < id.length; index += 2) {
      // Past the end, charCodeAt is NaN, which | reads as 0: an odd last unit is a block of its own.
      const block = id.charCodeAt(index) | (id.charCodeAt(index + 1) << 16);
      high = Math.imul(high ^ block, 0xcc9e2d51);
      high = Math.imul((high << 15) | (high >>> 17), 0x1b873593);
      low = Math.imul(low ^ block, 0x85ebca6b);
      low = Math.imul((low << 13) | (low >>> 19), 0xc2b2ae35);
    }
    this.high = mix32(high);
    this.low = mix32(low ^ id.length);
  }

  /** The table slot holding the current digest, or -1. */
  private find(): number {
    const mask = this.table.length - 1;
    for (let slot = this.low & mask; this.table.length > 0; slot = (slot + 1) & mask) {
      const entry = this.table[slot] as number;
      if (entry === 0) return -1;
      const at = (entry - 1) * 2;
      if (this.ring[at] === this.high && this.ring[at + 1] === this.low) return slot;
    }
    return -1;
  }

  private insert(position: number): void {
    const mask = this.table.length - 1;
    let slot = (this.ring[position * 2 + 1] as number) & mask;
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = position + 1;
  }

  /** Takes the id at a ring position out of the table, moving back the entries probed past its slot. */
  private forget(position: number): void {
    const mask = this.table.length - 1;
    let slot = (this.ring[position * 2 + 1] as number) & mask;
    while (this.table[slot] !== position + 1) slot = (slot + 1) & mask;
    for (let gap = slot, probe = (slot + 1) & mask; ; probe = (probe + 1) & mask) {
      const entry = this.table[probe] as number;
      if (entry === 0) {
        this.table[gap] = 0;
        return;
      }
      const home = (this.ring[(entry - 1) * 2 + 1] as number) & mask;
      // An entry whose home slot lies in the cyclic range (gap, probe] would not be found in the gap.
      if (((probe - home) & mask) < ((probe - gap) & mask)) continue;
      this.table[gap] = entry;
      gap = probe;
    }
  }

  /** Doubles the ring (up to `size` ids) and rebuilds the table at twice the ring's ids. */
  private grow(): void {
    const ids = Math.min(this.size, Math.max(1024, this.ring.length)); // ring.length: twice the ids it holds
    const ring = new Uint32Array(ids * 2);
    ring.set(this.ring);
    this.ring = ring;
    this.table = new Uint32Array(2 ** Math.ceil(Math.log2(ids * 2)));
    for (let position = 0; position < this.count; position += 1) this.insert(position);
  }
}

/**
 * The new ids of one request, by their digests (RecentIds.fresh): in order, and in a table of
 * positions + 1 by the digest's low half (probed linearly, at most half full), where a repeat
 * within the request is found. Two ids of one request share a digest with a chance of about
 * 2^-64, as two in the window do.
 */
export class RecentBatch {
  /** Each new id's digest, two 32-bit halves, in the order they came. */
  digests = new Uint32Array(0);
  count = 0;
  private table = new Uint32Array(0);

  /** False when the request gave this digest already; else it joins them. */
  join(high: number, low: number): boolean {
    if (this.count * 2 >= this.table.length) this.grow();
    const mask = this.table.length - 1;
    let slot = low & mask;
    for (let entry = this.table[slot] as number; entry !== 0; entry = this.table[slot] as number) {
      if (this.digests[(entry - 1) * 2] === high && this.digests[(entry - 1) * 2 + 1] === low) return false;
      slot = (slot + 1) & mask;
    }
    this.digests[this.count * 2] = high;
    this.digests[this.count * 2 + 1] = low;
    this.count += 1;
    this.table[slot] = this.count;
    return true;
  }

  /** Doubles the room for digests (from 128 ids) and rebuilds the table at twice as many slots. */
  private grow(): void {
    const ids = Math.max(128, this.count * 2);
    const digests = new Uint32Array(ids * 2);
    digests.set(this.digests);
    this.digests = digests;
    this.table = new Uint32Array(ids * 2);
    const mask = this.table.length - 1;
    for (let index = 0; index < this.count; index += 1) {
      let slot = (digests[index * 2 + 1] as number) & mask;
      while (this.table[slot] !== 0) slot = (slot + 1) & mask;
      this.table[slot] = index + 1;
    }
  }
}

/** MurmurHash3's finaliser: every input bit reaches every output bit. */
function mix32(value: number): number {
  let hash = value ^ (value >>> 16);
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}
