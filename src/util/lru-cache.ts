/** A size-bounded LRU map; `sizeOf` weighs entries (e.g. string length) against `maxSize`. */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();
  private size = 0;

  constructor(
    private readonly maxSize: number,
    private readonly sizeOf: (value: V) => number = () => 1,
  ) {}

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    // Re-insert to mark as most recently used (Map keeps insertion order).
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** Drops every entry. */
  clear(): void {
    this.map.clear();
    this.size = 0;
  }

  set(key: K, value: V): void {
    const weight = this.sizeOf(value);
    if (weight > this.maxSize) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.size -= this.sizeOf(old);
      this.map.delete(key);
    }
    this.map.set(key, value);
    this.size += weight;
    for (const [k, v] of this.map) {
      if (this.size <= this.maxSize) break;
      this.map.delete(k);
      this.size -= this.sizeOf(v);
    }
  }
}
