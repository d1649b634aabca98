/**
 * The one-bit codes of a store's vectors in memory as one set of contiguous typed arrays (vector-codes.ts encodes
 * them; a backend stores them as blocks), grown block by block as the index is extended, and the first pass of a
 * query over them. Contiguous so the scan is one tight loop over one array instead of a loop per block, and
 * sessions and kinds numbered once for the whole set, so a filter becomes a small lookup table.
 *
 * The first pass is gated when the set is large: each code's Hamming distance to the query's own signs (32 bits
 * at a time, counted with the usual bit tricks: about half the cost of the float estimate) is compared with a cut
 * drawn from a sample of the codes so that about {@link CodeScanOptions.prefilter} pass, and only those get the
 * asymmetric float estimate (the query in floats, vector-codes.ts queryTable) while their code is in cache; the
 * best `want` by the estimate go to the caller's exact re-rank. One pass: a first pass keeping the nearest by
 * Hamming distance and a second scoring them was slower than scoring every code (100,000 scattered reads).
 */
import type { CodeBlock, CodeFilter } from './vector-codes.js';
import { TopScores } from './vector-codes.js';

/** How a {@link CodeSet.scan} narrows: the number kept by the Hamming stage (0: every slot gets the float estimate). */
export interface CodeScanOptions {
  prefilter: number;
}

/** A query as the scan needs it: its table of partial sums (queryTable) and its signs as a code. */
export interface CodeQuery {
  table: Float32Array;
  bits: Uint32Array;
}

export class CodeSet {
  count = 0;
  codes: Uint32Array;
  scales: Float32Array;
  rowids: Float64Array;
  sessions: Int32Array;
  kinds: Uint16Array;
  ts: Float64Array;
  private readonly sessionIds = new Map<string, number>();
  private readonly kindIds = new Map<string, number>();

  constructor(readonly words: number) {
    this.codes = new Uint32Array(0);
    this.scales = new Float32Array(0);
    this.rowids = new Float64Array(0);
    this.sessions = new Int32Array(0);
    this.kinds = new Uint16Array(0);
    this.ts = new Float64Array(0);
  }

  /** Appends a block's slots (its codes must be `words` long), renumbering its sessions and kinds into the set's. */
  append(block: CodeBlock): void {
    if (block.count === 0) return;
    if (block.codes.length !== block.count * this.words) throw new Error(`a code block of ${block.codes.length / block.count} words in a set of ${this.words}`);
    this.reserve(this.count + block.count);
    const at = this.count;
    this.codes.set(block.codes, at * this.words);
    this.scales.set(block.scales, at);
    this.rowids.set(block.rowids, at);
    this.ts.set(block.ts, at);
    const sessionMap = block.sessionNames.map((name) => numberOf(this.sessionIds, name));
    const kindMap = block.kindNames.map((name) => numberOf(this.kindIds, name));
    for (let i = 0; i < block.count; i++) {
      this.sessions[at + i] = sessionMap[block.sessions[i]!]!;
      this.kinds[at + i] = kindMap[block.kinds[i]!]!;
    }
    this.count += block.count;
  }

  /**
   * The `want` best slots for `query` among those passing `filter`, as positions, best first. Slots scored by the
   * float estimate: all of them, or when there are more than `options.prefilter`, those within the Hamming cut
   * ({@link gateCut}); should fewer than `want` pass it, every slot.
   */
  scan(query: CodeQuery, filter: CodeFilter | null, want: number, options: CodeScanOptions): number[] {
    const allow = this.allowed(filter);
    const top = new TopScores(want);
    if (options.prefilter > 0 && this.count > options.prefilter) {
      const cut = this.gateCut(query.bits, allow, options.prefilter);
      const scored = this.words === 8 ? gated256(this.codes, this.scales, this.count, query, cut, allow, top) : this.gated(query, cut, allow, top);
      if (scored >= want) return top.positions();
      top.size = 0;
    }
    if (allow === null) scoreAll(this.codes, this.scales, this.count, this.words, query.table, top);
    else {
      for (let i = 0, o = 0; i < this.count; i++, o += this.words) {
        if (allow[i] === 0) continue;
        const s = scoreCode(this.codes, o, this.words, query.table) * this.scales[i]!;
        if (s > top.floor) top.offer(i, s);
      }
    }
    return top.positions();
  }

  /** Which slots pass `filter` (1) as a bitmap of the set's slots; null for every slot. */
  allowed(filter: CodeFilter | null): Uint8Array | null {
    if (filter === null) return null;
    const hasTime = filter.fromMs !== undefined || filter.toMs !== undefined;
    if (!filter.sessions && !filter.kinds && !hasTime) return null;
    let sessionOk: Uint8Array | null = null;
    if (filter.sessions) {
      sessionOk = new Uint8Array(this.sessionIds.size);
      for (const s of filter.sessions) {
        const n = this.sessionIds.get(s);
        if (n !== undefined) sessionOk[n] = 1;
      }
    }
    let kindOk: Uint8Array | null = null;
    if (filter.kinds) {
      kindOk = new Uint8Array(this.kindIds.size);
      for (const k of filter.kinds) {
        const n = this.kindIds.get(k);
        if (n !== undefined) kindOk[n] = 1;
      }
    }
    const from = filter.fromMs ?? -Infinity;
    const to = filter.toMs ?? Infinity;
    const allow = new Uint8Array(this.count);
    for (let i = 0; i < this.count; i++) {
      if (sessionOk !== null && sessionOk[this.sessions[i]!] === 0) continue;
      if (kindOk !== null && kindOk[this.kinds[i]!] === 0) continue;
      if (hasTime && (this.ts[i]! < from || this.ts[i]! > to)) continue;
      allow[i] = 1;
    }
    return allow;
  }

  /**
   * The Hamming distance to `bits` at or below which about `keep` allowed slots lie: the distances of an even
   * sample of at most {@link GATE_SAMPLE} allowed slots (every slot of a smaller set), cut at `keep`'s share.
   */
  gateCut(bits: Uint32Array, allow: Uint8Array | null, keep: number): number {
    const { codes, words, count } = this;
    const step = Math.max(1, Math.floor(count / GATE_SAMPLE));
    const histogram = new Int32Array(words * 32 + 1);
    let sampled = 0;
    const one = new Uint16Array(1);
    for (let i = 0; i < count; i += step) {
      if (allow !== null && allow[i] === 0) continue;
      hammingAll(codes.subarray(i * words, (i + 1) * words), 1, words, bits, one);
      histogram[one[0]!]!++;
      sampled++;
    }
    const allowedTotal = allow === null ? count : allow.reduce((n, a) => n + a, 0);
    const share = sampled * Math.min(1, keep / Math.max(1, allowedTotal));
    let cut = 0;
    let below = histogram[0]!;
    while (cut < words * 32 && below < share) below += histogram[++cut]!;
    return cut;
  }

  /** {@link gated256} for codes of any length. Returns how many slots were scored. */
  private gated(query: CodeQuery, cut: number, allow: Uint8Array | null, top: TopScores): number {
    const { codes, scales, words, count } = this;
    const one = new Uint16Array(1);
    let scored = 0;
    for (let i = 0, o = 0; i < count; i++, o += words) {
      if (allow !== null && allow[i] === 0) continue;
      hammingAll(codes.subarray(o, o + words), 1, words, query.bits, one);
      if (one[0]! > cut) continue;
      scored++;
      const s = scoreCode(codes, o, words, query.table) * scales[i]!;
      if (s > top.floor) top.offer(i, s);
    }
    return scored;
  }

  /** Room for `size` slots (grown by half again at least when full). */
  reserve(size: number): void {
    if (size <= this.scales.length) return;
    const capacity = Math.max(size, Math.ceil(this.scales.length * 1.5), 1024);
    const grow = <T extends Uint32Array | Float32Array | Float64Array | Int32Array | Uint16Array>(old: T, make: (n: number) => T, per: number): T => {
      const next = make(capacity * per);
      next.set(old.subarray(0, this.count * per) as never);
      return next;
    };
    this.codes = grow(this.codes, (n) => new Uint32Array(n), this.words);
    this.scales = grow(this.scales, (n) => new Float32Array(n), 1);
    this.rowids = grow(this.rowids, (n) => new Float64Array(n), 1);
    this.sessions = grow(this.sessions, (n) => new Int32Array(n), 1);
    this.kinds = grow(this.kinds, (n) => new Uint16Array(n), 1);
    this.ts = grow(this.ts, (n) => new Float64Array(n), 1);
  }
}

function numberOf(ids: Map<string, number>, name: string): number {
  let n = ids.get(name);
  if (n === undefined) {
    n = ids.size;
    ids.set(name, n);
  }
  return n;
}

/** Allowed slots sampled for the Hamming cut of a gated scan. */
export const GATE_SAMPLE = 8192;

/**
 * The gated scan for codes of 8 words (256 dimensions, the built-in embedder's), unrolled: each allowed slot's
 * Hamming distance to the query's signs, and the float estimate of those within `cut`. Returns how many were scored.
 */
function gated256(codes: Uint32Array, scales: Float32Array, count: number, query: CodeQuery, cut: number, allow: Uint8Array | null, top: TopScores): number {
  const { bits, table } = query;
  const q0 = bits[0]!;
  const q1 = bits[1]!;
  const q2 = bits[2]!;
  const q3 = bits[3]!;
  const q4 = bits[4]!;
  const q5 = bits[5]!;
  const q6 = bits[6]!;
  const q7 = bits[7]!;
  let floor = top.floor;
  let scored = 0;
  for (let i = 0, o = 0; i < count; i++, o += 8) {
    if (allow !== null && allow[i] === 0) continue;
    const d =
      popcount(codes[o]! ^ q0) +
      popcount(codes[o + 1]! ^ q1) +
      popcount(codes[o + 2]! ^ q2) +
      popcount(codes[o + 3]! ^ q3) +
      popcount(codes[o + 4]! ^ q4) +
      popcount(codes[o + 5]! ^ q5) +
      popcount(codes[o + 6]! ^ q6) +
      popcount(codes[o + 7]! ^ q7);
    if (d > cut) continue;
    scored++;
    const s = scoreCode(codes, o, 8, table) * scales[i]!;
    if (s > floor) {
      top.offer(i, s);
      floor = top.floor;
    }
  }
  return scored;
}

/** Every slot's float estimate offered to `top` (a loop of its own, so V8 compiles it without the filter checks). */
function scoreAll(codes: Uint32Array, scales: Float32Array, count: number, words: number, table: Float32Array, top: TopScores): void {
  let floor = top.floor;
  for (let i = 0, o = 0; i < count; i++, o += words) {
    const s = scoreCode(codes, o, words, table) * scales[i]!;
    if (s > floor) {
      top.offer(i, s);
      floor = top.floor;
    }
  }
}

/** The table's sum for the code at word `o` (the estimate of q . code before its scale). */
export function scoreCode(codes: Uint32Array, o: number, words: number, table: Float32Array): number {
  let s = 0;
  for (let w = 0, t = 0; w < words; w++, t += 1024) {
    const x = codes[o + w]!;
    s += table[t + (x & 255)]! + table[t + 256 + ((x >>> 8) & 255)]! + table[t + 512 + ((x >>> 16) & 255)]! + table[t + 768 + (x >>> 24)]!;
  }
  return s;
}

/**
 * Hamming distance of every code to `bits` into `out`. Per pair of words the bit counts are summed in 4-bit
 * fields before widening to bytes, and the byte fields of the whole code are added once at the end (a code of up
 * to 8,192 bits fits: fields of at most 16 per pair, summed over at most 15 pairs before a byte could overflow,
 * so longer codes are folded every 15 pairs).
 */
export function hammingAll(codes: Uint32Array, count: number, words: number, bits: Uint32Array, out: Uint16Array): void {
  if (words === 8) {
    hamming256(codes, count, bits, out);
    return;
  }
  for (let i = 0, o = 0; i < count; i++, o += words) {
    let total = 0;
    let bytes = 0;
    let pairs = 0;
    let w = 0;
    for (; w + 1 < words; w += 2) {
      let a = codes[o + w]! ^ bits[w]!;
      let b = codes[o + w + 1]! ^ bits[w + 1]!;
      a -= (a >>> 1) & 0x55555555;
      b -= (b >>> 1) & 0x55555555;
      let n = (a & 0x33333333) + ((a >>> 2) & 0x33333333) + (b & 0x33333333) + ((b >>> 2) & 0x33333333);
      n = (n & 0x0f0f0f0f) + ((n >>> 4) & 0x0f0f0f0f);
      bytes += n;
      if (++pairs === 15) {
        total += sumBytes(bytes);
        bytes = 0;
        pairs = 0;
      }
    }
    if (w < words) {
      let a = codes[o + w]! ^ bits[w]!;
      a -= (a >>> 1) & 0x55555555;
      a = (a & 0x33333333) + ((a >>> 2) & 0x33333333);
      total += Math.imul((a + (a >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
    }
    out[i] = total + sumBytes(bytes);
  }
}

/** The sum of the four byte fields of `x`. */
function sumBytes(x: number): number {
  const y = (x & 0x00ff00ff) + ((x >>> 8) & 0x00ff00ff);
  return (y & 0xffff) + (y >>> 16);
}

/** {@link hammingAll} for codes of 8 words (256 dimensions, the built-in embedder's), unrolled: about 1.5x faster. */
function hamming256(codes: Uint32Array, count: number, bits: Uint32Array, out: Uint16Array): void {
  const q0 = bits[0]!;
  const q1 = bits[1]!;
  const q2 = bits[2]!;
  const q3 = bits[3]!;
  const q4 = bits[4]!;
  const q5 = bits[5]!;
  const q6 = bits[6]!;
  const q7 = bits[7]!;
  for (let i = 0, o = 0; i < count; i++, o += 8) {
    out[i] =
      popcount(codes[o]! ^ q0) +
      popcount(codes[o + 1]! ^ q1) +
      popcount(codes[o + 2]! ^ q2) +
      popcount(codes[o + 3]! ^ q3) +
      popcount(codes[o + 4]! ^ q4) +
      popcount(codes[o + 5]! ^ q5) +
      popcount(codes[o + 6]! ^ q6) +
      popcount(codes[o + 7]! ^ q7);
  }
}

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}
