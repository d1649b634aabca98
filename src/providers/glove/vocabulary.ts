/**
 * The word -> row lookup, stored in the cache as flat arrays so a start costs no parsing: the words' UTF-8
 * bytes back to back, their offsets, and an open-addressing hash table of rows. Measured on the 341K-word
 * vocabulary: splitting the words and filling a `Map` took ~170 ms of a ~220 ms load; this takes none,
 * and keeps ~30 MB of strings off the heap. Lookups hash the UTF-16 code units, so no encoding is needed.
 */
export class Vocabulary {
  private readonly mask: number;
  private readonly decoder = new TextDecoder();

  constructor(
    /** The words' UTF-8 bytes, back to back. */
    readonly bytes: Uint8Array,
    /** Word `i` is `bytes[offsets[i] .. offsets[i + 1]]`; `size + 1` entries. */
    readonly offsets: Uint32Array,
    /** Power-of-two table; a slot holds row + 1, or 0 when empty. Linear probing. */
    readonly slots: Int32Array,
  ) {
    this.mask = slots.length - 1;
  }

  /** Builds the arrays for `words` (rows in order; a repeated word keeps its first row). */
  static build(words: readonly string[]): Vocabulary {
    const offsets = new Uint32Array(words.length + 1);
    for (let i = 0; i < words.length; i++) offsets[i + 1] = offsets[i]! + Buffer.byteLength(words[i]!, 'utf8');
    const bytes = Buffer.alloc(offsets[words.length]!);
    words.forEach((w, i) => bytes.write(w, offsets[i]!, 'utf8'));
    // Load factor <= 0.5: short probe sequences.
    let size = 1;
    while (size < words.length * 2) size *= 2;
    const vocabulary = new Vocabulary(bytes, offsets, new Int32Array(size));
    words.forEach((w, row) => vocabulary.insert(w, row));
    return vocabulary;
  }

  get size(): number {
    return this.offsets.length - 1;
  }

  /** The row of `word`, or undefined. */
  get(word: string): number | undefined {
    for (let slot = hashString(word) & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot]!;
      if (entry === 0) return undefined;
      if (this.matches(entry - 1, word)) return entry - 1;
    }
  }

  word(row: number): string {
    return this.decoder.decode(this.bytes.subarray(this.offsets[row]!, this.offsets[row + 1]!));
  }

  /** Whether the table is consistent with the words: every word found at its own row (or an earlier duplicate). */
  isConsistent(): boolean {
    for (let row = 0; row < this.size; row++) {
      const found = this.get(this.word(row));
      if (found === undefined || (found !== row && this.word(found) !== this.word(row))) return false;
    }
    return true;
  }

  private insert(word: string, row: number): void {
    for (let slot = hashString(word) & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot]!;
      if (entry === 0) {
        this.slots[slot] = row + 1;
        return;
      }
      if (this.matches(entry - 1, word)) return;
    }
  }

  private matches(row: number, word: string): boolean {
    const start = this.offsets[row]!;
    const length = this.offsets[row + 1]! - start;
    if (length === word.length) {
      // Same length in UTF-8 bytes and UTF-16 units: equal only if both are ASCII.
      for (let i = 0; i < length; i++) {
        const c = word.charCodeAt(i);
        if (c >= 0x80 || this.bytes[start + i] !== c) return false;
      }
      return true;
    }
    // UTF-8 is never shorter than UTF-16 units; a longer stored word holds non-ASCII (8 of 341K words).
    return length > word.length && this.word(row) === word;
  }
}

/** FNV-1a over UTF-16 code units, then the murmur3 finaliser. Part of the cache format: do not change. */
function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
