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

/**
 * A set's arrays up to a count, as a scan reads them: the slots below `count` never change once appended (growth
 * copies into new arrays, a purge or rebuild makes a new set), so a scan may run over a snapshot while the set grows.
 * In SharedArrayBuffers, so a worker thread (code-scanner.ts) scans them without a copy.
 */
export interface CodeArrays {
  count: number;
  words: number;
  codes: Uint32Array;
  scales: Float32Array;
  sessions: Int32Array;
  kinds: Uint16Array;
  ts: Float64Array;
}

/**
 * A {@link CodeFilter} as lookup tables over a set's numbering: allowed session and kind numbers (1), or null
 * for any; the time range inclusive. Plain data, so it can be posted to a worker.
 */
export interface SlotFilter {
  sessionOk: Uint8Array | null;
  kindOk: Uint8Array | null;
  fromMs: number;
  toMs: number;
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
   * The `want` best slots for `query` among those passing `filter`, as positions, best first ({@link scanCodes}),
   * on this thread. code-scanner.ts runs the same scan on a worker thread.
   */
  scan(query: CodeQuery, filter: CodeFilter | null, want: number, options: CodeScanOptions): number[] {
    return Array.from(scanCodes(this.snapshot(), query, this.slotFilter(filter), want, options.prefilter));
  }

  /** The set's arrays as they are now (the slots below `count` stay as they are while the set grows). */
  snapshot(): CodeArrays {
    return { count: this.count, words: this.words, codes: this.codes, scales: this.scales, sessions: this.sessions, kinds: this.kinds, ts: this.ts };
  }

  /** `filter` as lookup tables over this set's numbering; null when it allows every slot. */
  slotFilter(filter: CodeFilter | null): SlotFilter | null {
    if (filter === null) return null;
    const hasTime = filter.fromMs !== undefined || filter.toMs !== undefined;
    if (!filter.sessions && !filter.kinds && !hasTime) return null;
    const table = (ids: Map<string, number>, names: ReadonlySet<string>): Uint8Array => {
      const ok = new Uint8Array(ids.size);
      for (const name of names) {
        const n = ids.get(name);
        if (n !== undefined) ok[n] = 1;
      }
      return ok;
    };
    return {
      sessionOk: filter.sessions ? table(this.sessionIds, filter.sessions) : null,
      kindOk: filter.kinds ? table(this.kindIds, filter.kinds) : null,
      fromMs: filter.fromMs ?? -Infinity,
      toMs: filter.toMs ?? Infinity,
    };
  }

  /** Which slots pass `filter` (1) as a bitmap of the set's slots; null for every slot. */
  allowed(filter: CodeFilter | null): Uint8Array | null {
    return allowedSlots(this.snapshot(), this.slotFilter(filter));
  }

  /** {@link gateCutOf} over this set. */
  gateCut(bits: Uint32Array, allow: Uint8Array | null, keep: number): number {
    return gateCutOf(this.snapshot(), bits, allow, keep);
  }

  /** Room for `size` slots (grown by half again at least when full, into new shared arrays). */
  reserve(size: number): void {
    if (size <= this.scales.length) return;
    const capacity = Math.max(size, Math.ceil(this.scales.length * 1.5), 1024);
    const count = this.count;
    function grow<T extends Uint32Array | Float32Array | Float64Array | Int32Array | Uint16Array>(
      old: T,
      make: { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number },
      per: number,
    ): T {
      const out = new make(new SharedArrayBuffer(capacity * per * make.BYTES_PER_ELEMENT));
      out.set(old.subarray(0, count * per) as never);
      return out;
    }
    this.codes = grow(this.codes, Uint32Array, this.words);
    this.scales = grow(this.scales, Float32Array, 1);
    // Read on this thread only (positions to rowids), but shared like the rest, so the set has one kind of array.
    this.rowids = grow(this.rowids, Float64Array, 1);
    this.sessions = grow(this.sessions, Int32Array, 1);
    this.kinds = grow(this.kinds, Uint16Array, 1);
    this.ts = grow(this.ts, Float64Array, 1);
  }
}

/**
 * The `want` best slots of `set` for `query` among those passing `filter`, as positions, best first. Slots scored
 * by the float estimate: all of them, or when there are more than `prefilter` (> 0), those within the Hamming cut
 * ({@link gateCutOf}); should fewer than `want` pass it, every slot. A pure function of its arguments, run on the
 * caller's thread (CodeSet.scan); code-scanner.ts runs the same in ranges on worker threads ({@link scanRange},
 * {@link mergeRanges}), with the same result (ties go to the lower position, whatever the split).
 */
export function scanCodes(set: CodeArrays, query: CodeQuery, filter: SlotFilter | null, want: number, prefilter: number): Int32Array {
  const gated = isGated(set.count, prefilter);
  let part = scanRange(set, query, filter, want, prefilter, 0, set.count, gated);
  if (gated && part.scored < want) part = scanRange(set, query, filter, want, prefilter, 0, set.count, false);
  return mergeRanges([part], want);
}

/** Whether a scan of `count` codes is gated by Hamming distance first. */
export function isGated(count: number, prefilter: number): boolean {
  return prefilter > 0 && count > prefilter;
}

/** The best `want` of one range of a scan (positions and estimates, best first) and how many slots it scored. */
export interface RangeScan {
  positions: Int32Array;
  scores: Float32Array;
  scored: number;
}

/**
 * The slots `from` to `to` (exclusive) of a scan ({@link scanCodes}): gated by the cut of the whole set (the same
 * in every range) or, when `gated` is false, every allowed slot scored.
 */
export function scanRange(set: CodeArrays, query: CodeQuery, filter: SlotFilter | null, want: number, prefilter: number, from: number, to: number, gated: boolean): RangeScan {
  const allow = allowedSlots(set, filter);
  const { codes, scales, words } = set;
  const top = new TopScores(want);
  let scored = 0;
  if (gated) {
    const cut = gateCutOf(set, query.bits, allow, prefilter);
    scored = words === 8 ? gated256(codes, scales, from, to, query, cut, allow, top) : gatedAny(set, from, to, query, cut, allow, top);
  } else if (allow === null) scored = scoreAll(codes, scales, from, to, words, query.table, top);
  else {
    for (let i = from, o = from * words; i < to; i++, o += words) {
      if (allow[i] === 0) continue;
      scored++;
      const s = scoreCode(codes, o, words, query.table) * scales[i]!;
      if (s > top.floor) top.offer(i, s);
    }
  }
  return { ...top.sorted(), scored };
}

/** The best `want` of several ranges' best (a range's entries best first), as positions, best first. */
export function mergeRanges(parts: readonly RangeScan[], want: number): Int32Array {
  if (parts.length === 1) return parts[0]!.positions.slice(0, want);
  const top = new TopScores(want);
  for (const p of parts) for (let i = 0; i < p.positions.length; i++) top.offer(p.positions[i]!, p.scores[i]!);
  return top.sorted().positions;
}

/** Which of `set`'s slots pass `filter` (1) as a bitmap; null for every slot. */
export function allowedSlots(set: CodeArrays, filter: SlotFilter | null): Uint8Array | null {
  if (filter === null) return null;
  const { sessionOk, kindOk, fromMs: from, toMs: to } = filter;
  const hasTime = from !== -Infinity || to !== Infinity;
  const { sessions, kinds, ts, count } = set;
  const allow = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    if (sessionOk !== null && sessionOk[sessions[i]!] !== 1) continue;
    if (kindOk !== null && kindOk[kinds[i]!] !== 1) continue;
    if (hasTime && (ts[i]! < from || ts[i]! > to)) continue;
    allow[i] = 1;
  }
  return allow;
}

/**
 * The Hamming distance to `bits` at or below which about `keep` allowed slots lie: the distances of an even
 * sample of at most {@link GATE_SAMPLE} allowed slots (every slot of a smaller set), cut at `keep`'s share.
 */
export function gateCutOf(set: CodeArrays, bits: Uint32Array, allow: Uint8Array | null, keep: number): number {
  const { codes, words, count } = set;
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
  let allowedTotal = count;
  if (allow !== null) {
    allowedTotal = 0;
    for (let i = 0; i < count; i++) allowedTotal += allow[i]!;
  }
  const share = sampled * Math.min(1, keep / Math.max(1, allowedTotal));
  let cut = 0;
  let below = histogram[0]!;
  while (cut < words * 32 && below < share) below += histogram[++cut]!;
  return cut;
}

/** {@link gated256} for codes of any length. Returns how many slots were scored. */
function gatedAny(set: CodeArrays, from: number, to: number, query: CodeQuery, cut: number, allow: Uint8Array | null, top: TopScores): number {
  const { codes, scales, words } = set;
  const one = new Uint16Array(1);
  let scored = 0;
  for (let i = from, o = from * words; i < to; i++, o += words) {
    if (allow !== null && allow[i] === 0) continue;
    hammingAll(codes.subarray(o, o + words), 1, words, query.bits, one);
    if (one[0]! > cut) continue;
    scored++;
    const s = scoreCode(codes, o, words, query.table) * scales[i]!;
    if (s > top.floor) top.offer(i, s);
  }
  return scored;
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
function gated256(codes: Uint32Array, scales: Float32Array, from: number, to: number, query: CodeQuery, cut: number, allow: Uint8Array | null, top: TopScores): number {
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
  for (let i = from, o = from * 8; i < to; i++, o += 8) {
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

/** Every slot's float estimate offered to `top` (a loop of its own, so V8 compiles it without the filter checks). Returns the slots scored. */
function scoreAll(codes: Uint32Array, scales: Float32Array, from: number, to: number, words: number, table: Float32Array, top: TopScores): number {
  let floor = top.floor;
  for (let i = from, o = from * words; i < to; i++, o += words) {
    const s = scoreCode(codes, o, words, table) * scales[i]!;
    if (s > floor) {
      top.offer(i, s);
      floor = top.floor;
    }
  }
  return to - from;
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
