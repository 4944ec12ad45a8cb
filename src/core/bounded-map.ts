/**
 * A Map that keeps at most `limit` entries: setting a new key past it forgets the oldest (the
 * first inserted; setting a key again does not make it newer). For windows of recent things kept
 * by a long-running process: requests and events an inspector may be asked about, messages
 * recently warned of.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super();
  }

  override set(key: K, value: V): this {
    super.set(key, value);
    if (this.size > this.limit) this.delete(this.keys().next().value as K);
    return this;
  }
}
