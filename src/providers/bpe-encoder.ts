/**
 * Byte-pair encoding (the tiktoken algorithm) in time linear in the input.
 *
 * Why not the encoder of `gpt-tokenizer` itself: it merges each pre-token piece by scanning every pair for the
 * lowest rank and splicing arrays, which is quadratic in the piece's length, and it looks every pair up through a
 * UTF-8 validation and a `TextDecoder` call. A piece is a run without word breaks, so its length is the sender's
 * choice: a 300 KB message of one run took 81 s to count, during which the HTTP server answered nothing (issue
 * 12). Here pairs are looked up as byte strings, the lowest-ranked pair comes from a heap, and a piece longer than
 * {@link MAX_PIECE_BYTES} is encoded in bounded units, so the work is linear in the text whatever its content.
 * The merge rule is the reference one (lowest rank first, leftmost on ties): for every piece up to that length
 * the tokens are identical, which the tests check against `gpt-tokenizer`.
 */

/**
 * Longest pre-token piece encoded as a whole, in UTF-8 bytes. A longer piece (a line of 10,000 `=`, a base64 blob
 * without digits, a pasted run of emoji) is cut from its end into units of at most this many bytes, at character
 * boundaries, and each unit is encoded as if it were a piece: the piece's count is the sum of its units' counts,
 * exact per unit and within about one token per cut of the uncut count (well under 1 % at 512 bytes). Cutting
 * bounds the work per unit and lets a repeated run cost one unit, since units are cached; aligning them on the
 * piece's end makes a run and the same run behind one more character (`x` in a message, ` x` in its rendered
 * history line) share all units but the first. Ordinary text has no piece this long (the longest token is 128
 * bytes), so its count is exact.
 */
export const MAX_PIECE_BYTES = 512;

/** Units whose counts are remembered; past it the cache starts over (bounded memory without an LRU's upkeep). */
const MAX_CACHED_UNITS = 10_000;
/**
 * Shortest unit whose count is remembered. Merging a word costs less than making its cache key, so the cache is
 * for long units: the parts of long runs, which repeat (a run of one character) and are costly to merge.
 */
const MIN_CACHED_UNIT_BYTES = 64;

/**
 * A token vocabulary laid out for lookups that allocate nothing: every token's bytes back to back in `pool`, and an
 * open-addressing hash table from a polynomial hash of the bytes to the rank. The hash of two adjacent parts
 * joined is computed from theirs, so trying a merge costs O(1). Built once by {@link buildRankTable}.
 */
export interface RankTable {
  readonly pool: Uint8Array;
  /** Where token `rank` starts in `pool`, and its length in bytes. */
  readonly tokenStart: Int32Array;
  readonly tokenBytes: Int32Array;
  /**
   * Hash table, two ints per slot: the full hash of the token and `rank + 1` (0 = empty), side by side so a probe
   * reads one cache line (the table is 4 MB: a lookup is a cache miss, which is most of the cost of merging).
   */
  readonly slots: Int32Array;
  /**
   * One bit per hash value (modulo 2^21) of every token: 256 KB, small enough to stay in cache, and most pairs
   * tried in a merge are no token, so most lookups end here.
   */
  readonly filter: Uint32Array;
  /** Rank of each two-byte token at `first * 256 + second`, -1 where the pair is no token: the hottest lookup. */
  readonly pairRanks: Int32Array;
  /** Length in bytes of the longest token: a longer pair is never looked up. */
  readonly maxTokenBytes: number;
}

const HASH_MULTIPLIER = 0x01000193;

/** Builds a {@link RankTable} from a vocabulary listed by rank: UTF-8 text or raw bytes per token. */
export function buildRankTable(vocabulary: ReadonlyArray<string | readonly number[] | undefined>): RankTable {
  const count = vocabulary.length;
  const tokenStart = new Int32Array(count);
  const tokenBytes = new Int32Array(count);
  let total = 0;
  for (let rank = 0; rank < count; rank++) {
    const token = vocabulary[rank];
    const length = token === undefined ? 0 : typeof token === 'string' ? Buffer.byteLength(token) : token.length;
    tokenStart[rank] = total;
    tokenBytes[rank] = length;
    total += length;
  }
  const pool = Buffer.alloc(total);
  for (let rank = 0; rank < count; rank++) {
    const token = vocabulary[rank];
    if (typeof token === 'string') pool.write(token, tokenStart[rank]!);
    else if (token !== undefined) pool.set(token, tokenStart[rank]!);
  }
  // At most half full, so a probe ends after about two slots.
  let size = 1;
  while (size < count * 2) size *= 2;
  const slots = new Int32Array(size * 2);
  const filter = new Uint32Array(FILTER_BITS / 32);
  const pairRanks = new Int32Array(256 * 256).fill(-1);
  let maxTokenBytes = 1;
  for (let rank = 0; rank < count; rank++) {
    const length = tokenBytes[rank]!;
    if (length === 0) continue;
    const start = tokenStart[rank]!;
    let hash = 0;
    for (let k = 0; k < length; k++) hash = (Math.imul(hash, HASH_MULTIPLIER) + pool[start + k]!) | 0;
    let slot = slotOf(hash, size - 1);
    while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & (size - 1);
    slots[2 * slot] = hash;
    slots[2 * slot + 1] = rank + 1;
    const bit = filterBit(hash);
    filter[bit >>> 5] = filter[bit >>> 5]! | (1 << (bit & 31));
    if (length === 2) pairRanks[pool[start]! * 256 + pool[start + 1]!] = rank;
    if (length > maxTokenBytes) maxTokenBytes = length;
  }
  return { pool, tokenStart, tokenBytes, slots, filter, pairRanks, maxTokenBytes };
}

const FILTER_BITS = 1 << 21;

/** The filter's bit for a hash: other bits of it than the table slot's. */
function filterBit(hash: number): number {
  return Math.imul(hash ^ (hash >>> 13), 0x5bd1e995) >>> 11;
}

/** Spreads a polynomial hash over the table (its low bits alone are poor for short keys). */
function slotOf(hash: number, mask: number): number {
  const h = Math.imul(hash ^ (hash >>> 15), 0x2c1b3c6d);
  return (h ^ (h >>> 12)) & mask;
}

/** Rank of the token whose bytes are `bytes[start, start + length)` with polynomial hash `hash`, or -1. */
function lookup(table: RankTable, hash: number, bytes: Uint8Array, start: number, length: number): number {
  const { slots, filter, tokenStart, tokenBytes, pool } = table;
  const bit = filterBit(hash);
  if ((filter[bit >>> 5]! & (1 << (bit & 31))) === 0) return -1;
  const mask = (slots.length >> 1) - 1;
  for (let slot = slotOf(hash, mask); ; slot = (slot + 1) & mask) {
    const entry = slots[2 * slot + 1]!;
    if (entry === 0) return -1;
    if (slots[2 * slot] !== hash) continue;
    const rank = entry - 1;
    if (tokenBytes[rank] !== length) continue;
    const at = tokenStart[rank]!;
    let k = 0;
    while (k < length && pool[at + k] === bytes[start + k]) k++;
    if (k === length) return rank;
  }
}

/** Powers of the hash multiplier, for joining the hashes of two parts: h(ab) = h(a) * M^|b| + h(b). */
function hashPowers(maxTokenBytes: number): Int32Array {
  const powers = new Int32Array(maxTokenBytes + 1);
  powers[0] = 1;
  for (let k = 1; k <= maxTokenBytes; k++) powers[k] = Math.imul(powers[k - 1]!, HASH_MULTIPLIER);
  return powers;
}

/** A count in progress ({@link BpeEncoder.startCount}); `tokens` so far, final once the text is done. */
export interface CountProgress {
  readonly text: string;
  readonly tokens: number;
}

/** Where a count stands: the next piece, or the next unit of a long piece (whose end charPos/bytePos are at). */
interface MutableProgress {
  readonly text: string;
  readonly bytes: Buffer;
  charPos: number;
  bytePos: number;
  tokens: number;
  longPiece: { charStart: number; byteStart: number; ends: number[]; next: number; from: number } | undefined;
}

/**
 * Encodes text with a rank table and the pre-tokenizer's split pattern. Special tokens (`<|endoftext|>`) are not
 * recognised: in stored content they are text like any other, and counting them as text is what a model sees
 * when the content is pasted into a prompt.
 */
export class BpeEncoder {
  private readonly splitPattern: RegExp;
  private readonly powers: Int32Array;
  /** Token counts of units seen before, keyed by their bytes as a latin1 string. */
  private readonly unitCounts = new Map<string, number>();

  constructor(
    private readonly table: RankTable,
    splitPattern: RegExp,
  ) {
    this.splitPattern = new RegExp(splitPattern.source, `${splitPattern.flags.replace(/[gy]/g, '')}y`);
    this.powers = hashPowers(table.maxTokenBytes);
  }

  /** Number of tokens of `text` (see {@link MAX_PIECE_BYTES} for runs without word breaks). */
  count(text: string): number {
    return text.length === 0 ? 0 : this.scan(text, Number.POSITIVE_INFINITY).tokens;
  }

  /**
   * Length in UTF-16 code units of the longest prefix of `text` whose tokens number at most `maxTokens`, cut at a
   * token boundary and never inside a character (a token ending inside a multi-byte character is dropped with
   * it). Reads the text only up to the cut.
   */
  prefixLength(text: string, maxTokens: number): number {
    if (maxTokens <= 0 || text.length === 0) return 0;
    return this.scan(text, maxTokens).cut;
  }

  /** Starts a count to advance with {@link countStep}: for callers that must yield to other work while counting. */
  startCount(text: string): CountProgress {
    const progress: MutableProgress = { text, bytes: Buffer.from(text, 'utf8'), charPos: 0, bytePos: 0, tokens: 0, longPiece: undefined };
    return progress;
  }

  /**
   * Counts at most `units` more units (pieces, or parts of at most MAX_PIECE_BYTES of a long one) of
   * `progress.text` into `progress.tokens`; true once the text is done.
   */
  countStep(progress: CountProgress, units: number): boolean {
    const p = progress as MutableProgress;
    this.advance(p, Number.POSITIVE_INFINITY, units);
    return p.charPos >= p.text.length && p.longPiece === undefined;
  }

  private scan(text: string, maxTokens: number): { tokens: number; cut: number } {
    const progress = this.startCount(text) as MutableProgress;
    const cut = this.advance(progress, maxTokens, Number.POSITIVE_INFINITY);
    return { tokens: progress.tokens, cut: cut ?? text.length };
  }

  /**
   * Encodes piece by piece, unit by unit, from where `p` stands, for at most `maxUnits` units (a piece, or a part of
   * a long one) or until `maxTokens` would be exceeded; then returns the length of the prefix kept, in code units
   * (undefined while within the budget). Stopping inside a long piece, it resumes there. One loop without a
   * callback, a match array or an object per piece: a megabyte of random text has half a million pieces.
   */
  private advance(p: MutableProgress, maxTokens: number, maxUnits: number): number | undefined {
    const { text, bytes } = p;
    const re = this.splitPattern;
    let total = p.tokens;
    let charPos = p.charPos;
    let bytePos = p.bytePos;
    let units = 0;
    try {
      for (;;) {
        const long = p.longPiece;
        if (long) {
          // The rest of a long piece, whose end charPos/bytePos already stand at.
          for (; long.next < long.ends.length; long.next++) {
            if (units++ >= maxUnits) return undefined;
            const to = long.ends[long.next]!;
            const tokens = this.unitCount(bytes, long.from, to);
            if (total + tokens > maxTokens) return long.charStart + this.keptChars(text, bytes, long.charStart, charPos, long.byteStart, long.from, to, maxTokens - total);
            total += tokens;
            long.from = to;
          }
          p.longPiece = undefined;
        }
        if (charPos >= text.length || units >= maxUnits) return undefined;
        const charStart = charPos;
        const byteStart = bytePos;
        re.lastIndex = charPos;
        // Sticky: a piece starts where the last one ended. The o200k pattern covers every character; one that a
        // pattern skipped would be a piece of its own.
        const charEnd = re.test(text) && re.lastIndex > charPos ? re.lastIndex : charPos + (utf8Width(text, charPos) === 4 ? 2 : 1);
        for (; charPos < charEnd; charPos++) bytePos += utf8Width(text, charPos);
        if (bytePos - byteStart > MAX_PIECE_BYTES) {
          p.longPiece = { charStart, byteStart, ends: unitEnds(bytes, byteStart, bytePos), next: 0, from: byteStart };
          continue;
        }
        units++;
        const tokens = this.unitCount(bytes, byteStart, bytePos);
        if (total + tokens > maxTokens) return charStart + this.keptChars(text, bytes, charStart, charEnd, byteStart, byteStart, bytePos, maxTokens - total);
        total += tokens;
      }
    } finally {
      p.tokens = total;
      p.charPos = charPos;
      p.bytePos = bytePos;
    }
  }

  /**
   * Code units, from `charStart`, of the piece `text[charStart, charEnd)` (bytes from `pieceByteStart`) kept when
   * only the first `keep` tokens of its unit `bytes[from, to)` fit.
   */
  private keptChars(text: string, bytes: Buffer, charStart: number, charEnd: number, pieceByteStart: number, from: number, to: number, keep: number): number {
    // ends[k] is where token k of the unit ends, relative to the unit.
    const ends: number[] = [];
    this.merge(bytes, from, to, ends);
    const keepBytes = from - pieceByteStart + (keep > 0 ? ends[keep - 1]! : 0);
    return charsWithinBytes(text, charStart, charEnd, keepBytes);
  }

  /** Tokens of one unit (a piece, or a part of a long one); remembered when long, unless a single token. */
  private unitCount(bytes: Buffer, start: number, end: number): number {
    const n = end - start;
    if (n === 1) return 1;
    if (n === 2) return this.table.pairRanks[bytes[start]! * 256 + bytes[start + 1]!]! >= 0 ? 1 : 2;
    if (n <= this.table.maxTokenBytes && this.wholeRank(bytes, start, end) >= 0) return 1;
    if (n < MIN_CACHED_UNIT_BYTES) return this.merge(bytes, start, end, undefined);
    const key = bytes.toString('latin1', start, end);
    const cached = this.unitCounts.get(key);
    if (cached !== undefined) return cached;
    const count = this.merge(bytes, start, end, undefined);
    if (this.unitCounts.size >= MAX_CACHED_UNITS) this.unitCounts.clear();
    this.unitCounts.set(key, count);
    return count;
  }

  /** Rank of the bytes `[start, end)` as one token, or -1. */
  private wholeRank(bytes: Uint8Array, start: number, end: number): number {
    let hash = 0;
    for (let k = start; k < end; k++) hash = (Math.imul(hash, HASH_MULTIPLIER) + bytes[k]!) | 0;
    return lookup(this.table, hash, bytes, start, end - start);
  }

  /**
   * Merges the bytes `[start, end)` (at most {@link MAX_PIECE_BYTES}): repeatedly the adjacent pair of parts with
   * the lowest rank, leftmost first, until no adjacent pair is a token. Returns the number of tokens; when `ends`
   * is given, pushes where each token ends, relative to `start`.
   */
  private merge(bytes: Uint8Array, start: number, end: number, ends: number[] | undefined): number {
    const n = end - start;
    const table = this.table;
    const { pairRanks, maxTokenBytes } = table;
    const powers = this.powers;
    if (n === 1 || (n <= maxTokenBytes && this.wholeRank(bytes, start, end) >= 0)) {
      ends?.push(n);
      return 1;
    }
    const next = nextOf;
    const prev = prevOf;
    const rank = rankOf;
    const hash = hashOf;
    const stride = n + 1;
    // Parts are linked by next/prev (offsets relative to start; n ends the list); hash[i] is part i's hash.
    // rank[i] is the rank of part i joined with the part after it, NO_PAIR when that is no token, ABSORBED once
    // part i was merged into the part before it. The heap holds rank * stride + i (below 2^31: ranks are below
    // 2^21 and stride at most 513), so the smallest key is the lowest rank and, among equal ranks, the leftmost
    // pair: the reference rule. An entry whose rank no longer matches rank[i] is stale and skipped; a pair only
    // grows and a rank names one byte string, so an entry that matches is the live pair.
    heapSize = 0;
    for (let i = 0; i < n; i++) {
      next[i] = i + 1;
      prev[i] = i - 1;
      hash[i] = bytes[start + i]!;
    }
    next[n] = n;
    for (let i = 0; i < n - 1; i++) {
      const r = pairRanks[bytes[start + i]! * 256 + bytes[start + i + 1]!]!;
      rank[i] = r < 0 ? NO_PAIR : r;
      if (r >= 0) heap[heapSize++] = r * stride + i;
    }
    rank[n - 1] = NO_PAIR;
    heapify();

    let parts = n;
    while (heapSize > 0) {
      const key = heapPop();
      const i = key % stride;
      if (rank[i] !== ((key - i) / stride | 0)) continue;
      const j = next[i]!;
      const after = next[j]!;
      hash[i] = (Math.imul(hash[i]!, powers[after - j]!) + hash[j]!) | 0;
      next[i] = after;
      if (after < n) prev[after] = i;
      rank[j] = ABSORBED;
      parts--;
      const ri = after >= n ? NO_PAIR : joinedRank(table, powers, bytes, start, i, after, next[after]!);
      rank[i] = ri;
      if (ri !== NO_PAIR) heapPush(ri * stride + i);
      const p = prev[i]!;
      if (p >= 0) {
        const rp = joinedRank(table, powers, bytes, start, p, i, after);
        rank[p] = rp;
        if (rp !== NO_PAIR) heapPush(rp * stride + p);
      }
    }
    if (ends) {
      for (let i = 0; i < n; i = next[i]!) ends.push(next[i]!);
    }
    return parts;
  }
}

/** Rank of the part at `a` joined with the part at `b` (which ends at `bEnd`), or NO_PAIR; offsets from `start`. */
function joinedRank(table: RankTable, powers: Int32Array, bytes: Uint8Array, start: number, a: number, b: number, bEnd: number): number {
  const length = bEnd - a;
  if (length > table.maxTokenBytes) return NO_PAIR;
  const h = (Math.imul(hashOf[a]!, powers[bEnd - b]!) + hashOf[b]!) | 0;
  const r = lookup(table, h, bytes, start + a, length);
  return r < 0 ? NO_PAIR : r;
}

/**
 * Where the units of the piece `[start, end)` of `bytes` end, in order: the piece itself when it is at most
 * {@link MAX_PIECE_BYTES}, else cuts every MAX_PIECE_BYTES counted back from its end, each moved forward to the
 * start of a UTF-8 character.
 */
function unitEnds(bytes: Uint8Array, start: number, end: number): number[] {
  if (end - start <= MAX_PIECE_BYTES) return [end];
  const ends = [end];
  let to = end;
  while (to - start > MAX_PIECE_BYTES) {
    let cut = to - MAX_PIECE_BYTES;
    while ((bytes[cut]! & 0xc0) === 0x80) cut++;
    ends.push(cut);
    to = cut;
  }
  return ends.reverse();
}

/** UTF-8 length of the code unit at `i` of `text`: a surrogate pair counts 4 at its first half, 0 at its second. */
function utf8Width(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = text.charCodeAt(i + 1);
    return d >= 0xdc00 && d <= 0xdfff ? 4 : 3;
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const p = i > 0 ? text.charCodeAt(i - 1) : 0;
    return p >= 0xd800 && p <= 0xdbff ? 0 : 3;
  }
  return 3;
}

/** Code units of `text[from, to)` whose UTF-8 encoding fits in `maxBytes`, never splitting a character. */
function charsWithinBytes(text: string, from: number, to: number, maxBytes: number): number {
  let bytes = 0;
  let i = from;
  while (i < to) {
    const w = utf8Width(text, i);
    if (bytes + w > maxBytes) break;
    bytes += w;
    i += w === 4 ? 2 : 1;
  }
  return i - from;
}

// Scratch space for one merge at a time (encoding is synchronous), sized for the longest unit.
const nextOf = new Int32Array(MAX_PIECE_BYTES + 1);
const prevOf = new Int32Array(MAX_PIECE_BYTES + 1);
const rankOf = new Int32Array(MAX_PIECE_BYTES + 1);
/** rankOf values that are no rank: no token joins this part and the next; this part was merged away. */
const NO_PAIR = 0x7fffffff;
const ABSORBED = -1;
const hashOf = new Int32Array(MAX_PIECE_BYTES + 1);
// Each merge pushes at most two entries, on top of one per initial pair.
const heap = new Int32Array(3 * MAX_PIECE_BYTES + 3);
let heapSize = 0;

function heapPush(key: number): void {
  let i = heapSize++;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const above = heap[parent]!;
    if (above <= key) break;
    heap[i] = above;
    i = parent;
  }
  heap[i] = key;
}

/** Orders `heap[0, heapSize)` in place, in linear time. */
function heapify(): void {
  for (let i = (heapSize >> 1) - 1; i >= 0; i--) siftDown(i, heap[i]!);
}

function heapPop(): number {
  const top = heap[0]!;
  const last = heap[--heapSize]!;
  if (heapSize > 0) siftDown(0, last);
  return top;
}

/** Places `key` at `i` or below it, moving smaller children up. */
function siftDown(start: number, key: number): void {
  let i = start;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= heapSize) break;
    const r = l + 1;
    const c = r < heapSize && heap[r]! < heap[l]! ? r : l;
    if (heap[c]! >= key) break;
    heap[i] = heap[c]!;
    i = c;
  }
  heap[i] = key;
}
