/**
 * One-bit vector codes for a first pass over every stored vector, in memory, before an exact re-rank. A vector
 * is kept as the signs of its difference from the store's mean vector (one bit per dimension) and one scale (the
 * mean absolute difference), so q . v ~ q . mean + scale x sum(q_d x sign_d). The query stays in floats
 * (asymmetric: only the stored side is quantized), scored a byte at a time from a per-query table of 256 partial
 * sums per byte position. The first pass keeps the best `candidates` by that estimate; the caller reads their
 * float vectors and ranks them exactly, so what it returns is exact among the candidates and what it misses is a
 * neighbour the estimate ranked below them (measured against exact search in bench/results/vectors-scale.md).
 *
 * Why not an IVF or a graph: the built-in embedder's vectors (GloVe words plus hashed character trigrams) are
 * weakly clustered, so probing a share of k-means lists missed 40 % of the 10 nearest at 100K, and an HNSW graph
 * (usearch, i8) found 40-56 % while taking minutes to build; a scan of every code misses little and builds in one
 * pass (bench/results/vectors-scale.md).
 */

/** Bits per 32-bit word of a code. */
const WORD_BITS = 32;

/** Words of a code of `dims` dimensions. */
export function codeWords(dims: number): number {
  return Math.ceil(dims / WORD_BITS);
}

/** The code of `v` (dims floats from `offset`) against `mean`, into `out` at word `at`; returns its scale. */
export function encodeVector(v: Float32Array, offset: number, mean: Float32Array, out: Uint32Array, at: number): number {
  const dims = mean.length;
  let abs = 0;
  for (let w = 0; w < codeWords(dims); w++) {
    let bits = 0;
    const end = Math.min(dims, (w + 1) * WORD_BITS);
    for (let d = w * WORD_BITS; d < end; d++) {
      const x = v[offset + d]! - mean[d]!;
      abs += Math.abs(x);
      if (x > 0) bits |= 1 << (d - w * WORD_BITS);
    }
    out[at + w] = bits >>> 0;
  }
  return abs / dims;
}

/** Per-query table: for byte position p (8 dimensions) and byte value b, sum over its bits of +q_d (set) or -q_d. */
export function queryTable(q: Float32Array, dims: number): Float32Array {
  const bytes = codeWords(dims) * 4;
  const table = new Float32Array(bytes * 256);
  for (let p = 0; p < bytes; p++) {
    for (let b = 0; b < 256; b++) {
      let s = 0;
      for (let bit = 0; bit < 8; bit++) {
        const d = p * 8 + bit;
        if (d >= dims) break;
        s += (b >>> bit) & 1 ? q[d]! : -q[d]!;
      }
      table[p * 256 + b] = s;
    }
  }
  return table;
}

/**
 * The `want` highest of `scores`' entries, as positions, by a bounded min-heap (most entries fail the first
 * comparison once the heap is full). Ties broken by position (the lower wins), a total order, so the kept set does
 * not depend on the order of the offers: the best of several ranges' best is the best of the whole.
 */
export class TopScores {
  private readonly pos: Int32Array;
  private readonly val: Float32Array;
  size = 0;

  constructor(readonly want: number) {
    this.pos = new Int32Array(Math.max(1, want));
    this.val = new Float32Array(Math.max(1, want));
  }

  /**
   * The least score kept, once full; -Infinity before. A caller offering positions in increasing order may skip a
   * score not above it (an equal score at a later position loses the tie).
   */
  get floor(): number {
    return this.size < this.want ? -Infinity : this.val[0]!;
  }

  offer(position: number, score: number): void {
    if (this.want <= 0) return;
    // The score is stored as a float32: compare it as stored, so ties are ties.
    score = Math.fround(score);
    if (this.size < this.want) {
      let i = this.size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        const pv = this.val[parent]!;
        // The root is the worst kept: move up while the new entry is worse than its parent.
        if (!(score < pv || (score === pv && position > this.pos[parent]!))) break;
        this.val[i] = pv;
        this.pos[i] = this.pos[parent]!;
        i = parent;
      }
      this.val[i] = score;
      this.pos[i] = position;
      return;
    }
    const v0 = this.val[0]!;
    if (!(score > v0 || (score === v0 && position < this.pos[0]!))) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c = r < this.size && (this.val[r]! < this.val[l]! || (this.val[r] === this.val[l] && this.pos[r]! > this.pos[l]!)) ? r : l;
      const cv = this.val[c]!;
      if (!(cv < score || (cv === score && this.pos[c]! > position))) break;
      this.val[i] = cv;
      this.pos[i] = this.pos[c]!;
      i = c;
    }
    this.val[i] = score;
    this.pos[i] = position;
  }

  /** The kept entries, best first: positions and their scores. */
  sorted(): { positions: Int32Array; scores: Float32Array } {
    const order = Array.from({ length: this.size }, (_, i) => i).sort((a, b) => this.val[b]! - this.val[a]! || this.pos[a]! - this.pos[b]!);
    return { positions: Int32Array.from(order, (i) => this.pos[i]!), scores: Float32Array.from(order, (i) => this.val[i]!) };
  }

  /** The kept positions, best first. */
  positions(): number[] {
    return Array.from(this.sorted().positions);
  }
}

/** Codes of many vectors with what a filter needs, in parallel arrays (one slot per vector). */
export interface CodeBlock {
  count: number;
  rowids: Float64Array;
  codes: Uint32Array;
  scales: Float32Array;
  /** Index into {@link CodeBlock.sessionNames}. */
  sessions: Int32Array;
  sessionNames: string[];
  /** Index into {@link CodeBlock.kindNames}. */
  kinds: Uint8Array;
  kindNames: string[];
  ts: Float64Array;
}

/** Which slots a scan may score: `null` for every one. */
export interface CodeFilter {
  sessions?: ReadonlySet<string>;
  kinds?: ReadonlySet<string>;
  fromMs?: number;
  toMs?: number;
}

/**
 * Scores every slot of `block` passing `filter` against the query's table and offers it to `top` (positions are
 * `base + slot`). The estimate leaves out q . mean, the same for every vector.
 */
export function scanBlock(block: CodeBlock, table: Float32Array, words: number, filter: CodeFilter | null, top: TopScores, base: number): void {
  const { codes, scales, count } = block;
  let allowSession: Uint8Array | null = null;
  let allowKind: Uint8Array | null = null;
  if (filter?.sessions) {
    allowSession = new Uint8Array(block.sessionNames.length);
    block.sessionNames.forEach((s, i) => (allowSession![i] = filter.sessions!.has(s) ? 1 : 0));
  }
  if (filter?.kinds) {
    allowKind = new Uint8Array(block.kindNames.length);
    block.kindNames.forEach((k, i) => (allowKind![i] = filter.kinds!.has(k) ? 1 : 0));
  }
  const from = filter?.fromMs ?? -Infinity;
  const to = filter?.toMs ?? Infinity;
  const hasTime = from !== -Infinity || to !== Infinity;
  const filtered = allowSession !== null || allowKind !== null || hasTime;
  if (!filtered) {
    scanAll(codes, scales, count, words, table, top, base);
    return;
  }
  let floor = top.floor;
  for (let i = 0, o = 0; i < count; i++, o += words) {
    if (filtered) {
      if (allowSession !== null && allowSession[block.sessions[i]!] === 0) continue;
      if (allowKind !== null && allowKind[block.kinds[i]!] === 0) continue;
      if (hasTime && (block.ts[i]! < from || block.ts[i]! > to)) continue;
    }
    const s = scoreAny(codes, o, words, table) * scales[i]!;
    if (s > floor) {
      top.offer(base + i, s);
      floor = top.floor;
    }
  }
}

/** {@link scanBlock} without a filter: every slot scored (kept apart so V8 compiles the hot loop alone). */
function scanAll(codes: Uint32Array, scales: Float32Array, count: number, words: number, table: Float32Array, top: TopScores, base: number): void {
  let floor = top.floor;
  for (let i = 0, o = 0; i < count; i++, o += words) {
    const s = scoreAny(codes, o, words, table) * scales[i]!;
    if (s > floor) {
      top.offer(base + i, s);
      floor = top.floor;
    }
  }
}

/** The table's sum for the code at `o` (any length). */
function scoreAny(codes: Uint32Array, o: number, words: number, table: Float32Array): number {
  let s = 0;
  for (let w = 0, t = 0; w < words; w++, t += 1024) {
    const x = codes[o + w]!;
    s += table[t + (x & 255)]! + table[t + 256 + ((x >>> 8) & 255)]! + table[t + 512 + ((x >>> 16) & 255)]! + table[t + 768 + (x >>> 24)]!;
  }
  return s;
}

/** Builds a {@link CodeBlock} from rows (vectors as float blobs) against `mean`. */
export function encodeBlock(
  rows: ReadonlyArray<{ rowid: number; embedding: Float32Array; session_id: string; kind: string; ts_ms: number }>,
  mean: Float32Array,
): CodeBlock {
  return buildBlock(rows, codeWords(mean.length), (v, out, at) => encodeVector(v, 0, mean, out, at));
}

/** A block of `rows` whose codes (`words` words each) and scales `encode` writes. */
function buildBlock(
  rows: ReadonlyArray<{ rowid: number; embedding: Float32Array; session_id: string; kind: string; ts_ms: number }>,
  words: number,
  encode: (v: Float32Array, out: Uint32Array, at: number) => number,
): CodeBlock {
  const block: CodeBlock = {
    count: rows.length,
    rowids: new Float64Array(rows.length),
    codes: new Uint32Array(rows.length * words),
    scales: new Float32Array(rows.length),
    sessions: new Int32Array(rows.length),
    sessionNames: [],
    kinds: new Uint8Array(rows.length),
    kindNames: [],
    ts: new Float64Array(rows.length),
  };
  const sessionIndex = new Map<string, number>();
  const kindIndex = new Map<string, number>();
  rows.forEach((r, i) => {
    block.rowids[i] = r.rowid;
    block.scales[i] = encode(r.embedding, block.codes, i * words);
    let s = sessionIndex.get(r.session_id);
    if (s === undefined) {
      s = block.sessionNames.push(r.session_id) - 1;
      sessionIndex.set(r.session_id, s);
    }
    block.sessions[i] = s;
    let k = kindIndex.get(r.kind);
    if (k === undefined) {
      if (block.kindNames.length === 255) throw new Error('more than 255 event kinds in one code block');
      k = block.kindNames.push(r.kind) - 1;
      kindIndex.set(r.kind, k);
    }
    block.kinds[i] = k;
    block.ts[i] = r.ts_ms;
  });
  return block;
}

/** A block as bytes (little-endian typed arrays after a JSON header) and back, for storing it as one blob. */
export function blockToBytes(block: CodeBlock): Buffer {
  const header = Buffer.from(JSON.stringify({ count: block.count, words: block.codes.length / Math.max(1, block.count), sessions: block.sessionNames, kinds: block.kindNames }));
  const parts = [block.rowids, block.ts, block.codes, block.scales, block.sessions, block.kinds];
  const head = Buffer.alloc(8);
  head.writeUInt32LE(header.length, 0);
  const pad = (8 - ((8 + header.length) % 8)) % 8;
  return Buffer.concat([head, header, Buffer.alloc(pad), ...parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))]);
}

export function blockFromBytes(bytes: Buffer): CodeBlock {
  const headerLength = bytes.readUInt32LE(0);
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as { count: number; words: number; sessions: string[]; kinds: string[] };
  // Copy into an aligned buffer: a Buffer from SQLite may start at any offset.
  const start = 8 + headerLength + ((8 - ((8 + headerLength) % 8)) % 8);
  const body = new Uint8Array(bytes.length - start);
  body.set(bytes.subarray(start));
  const n = header.count;
  const words = n === 0 ? 0 : header.words;
  let at = 0;
  const take = <T>(make: (buf: ArrayBuffer, offset: number, length: number) => T, length: number, size: number): T => {
    const out = make(body.buffer, at, length);
    at += length * size;
    return out;
  };
  const rowids = take((b, o, l) => new Float64Array(b, o, l), n, 8);
  const ts = take((b, o, l) => new Float64Array(b, o, l), n, 8);
  const codes = take((b, o, l) => new Uint32Array(b, o, l), n * words, 4);
  const scales = take((b, o, l) => new Float32Array(b, o, l), n, 4);
  const sessions = take((b, o, l) => new Int32Array(b, o, l), n, 4);
  const kinds = take((b, o, l) => new Uint8Array(b, o, l), n, 1);
  return { count: n, rowids, codes, scales, sessions, sessionNames: header.sessions, kinds, kindNames: header.kinds, ts };
}

/**
 * Rotated codes (the default since the index's second encoding): the difference from the mean is turned by a fixed
 * random rotation (a sign flip per dimension, then the normalised Walsh-Hadamard transform, over the dimensions
 * padded with zeros to a power of two) before its signs are taken, and the query is turned the same way. A rotation
 * keeps dot products, and it spreads each vector's weight over every dimension: the built-in embedder puts most of
 * a vector's length in a few dimensions, where one sign bit says little, so without it the codes ranked a true
 * neighbour far down. Measured on the built-in vectors (bench/results/vectors-scale.md): at 100K the best 500 by
 * the rotated codes hold 98 % of exact search's 10 nearest, the unrotated best 2,000 96 %.
 */
export const ROTATED_ENCODING = 'hadamard-1';

/** Length of a rotated vector: `dims` padded to a power of two. */
export function rotatedDims(dims: number): number {
  let p = 1;
  while (p < dims) p *= 2;
  return p;
}

const rotationSigns = new Map<number, Float32Array>();

/** The rotation's fixed sign per dimension (a deterministic pseudo-random sequence, the same in every process). */
function signsOf(length: number): Float32Array {
  let signs = rotationSigns.get(length);
  if (!signs) {
    signs = new Float32Array(length);
    let a = 0x9e3779b9;
    for (let d = 0; d < length; d++) {
      a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      signs[d] = a & 0x80000 ? 1 : -1;
    }
    rotationSigns.set(length, signs);
  }
  return signs;
}

/**
 * Rotates `x` (its first `dims` entries from `offset`, minus `mean` when given) into `out` (length
 * {@link rotatedDims}): sign flips, then the Walsh-Hadamard transform scaled by 1/sqrt(length), an orthogonal map.
 */
export function rotateInto(x: Float32Array, offset: number, dims: number, mean: Float32Array | null, out: Float32Array): void {
  const n = out.length;
  const signs = signsOf(n);
  for (let d = 0; d < n; d++) out[d] = d < dims ? (x[offset + d]! - (mean ? mean[d]! : 0)) * signs[d]! : 0;
  for (let h = 1; h < n; h *= 2) {
    for (let a = 0; a < n; a += 2 * h) {
      for (let b = a; b < a + h; b++) {
        const u = out[b]!;
        const v = out[b + h]!;
        out[b] = u + v;
        out[b + h] = u - v;
      }
    }
  }
  const s = 1 / Math.sqrt(n);
  for (let d = 0; d < n; d++) out[d]! *= s;
}

/**
 * The rotated code of `v` (dims floats from `offset`) against `mean`, into `out` at word `at`
 * ({@link codeWords} of {@link rotatedDims} words); returns its scale. `scratch`: rotatedDims(dims) floats.
 */
export function encodeRotated(v: Float32Array, offset: number, mean: Float32Array, out: Uint32Array, at: number, scratch: Float32Array): number {
  rotateInto(v, offset, mean.length, mean, scratch);
  return signCode(scratch, out, at);
}

/** The signs of `y` as a code into `out` at word `at`; returns the mean absolute entry (the code's scale). */
function signCode(y: Float32Array, out: Uint32Array, at: number): number {
  let abs = 0;
  for (let w = 0; w < codeWords(y.length); w++) {
    let bits = 0;
    const end = Math.min(y.length, (w + 1) * WORD_BITS);
    for (let d = w * WORD_BITS; d < end; d++) {
      abs += Math.abs(y[d]!);
      if (y[d]! > 0) bits |= 1 << (d - w * WORD_BITS);
    }
    out[at + w] = bits >>> 0;
  }
  return abs / y.length;
}

/** The query as rotated codes are scored: its rotation's table ({@link queryTable}) and its own signs as a code. */
export function rotatedQuery(q: Float32Array): { table: Float32Array; bits: Uint32Array; dims: number } {
  const dims = rotatedDims(q.length);
  const r = new Float32Array(dims);
  rotateInto(q, 0, q.length, null, r);
  const bits = new Uint32Array(codeWords(dims));
  signCode(r, bits, 0);
  return { table: queryTable(r, dims), bits, dims };
}

/** {@link encodeBlock} with rotated codes ({@link encodeRotated}). */
export function encodeRotatedBlock(
  rows: ReadonlyArray<{ rowid: number; embedding: Float32Array; session_id: string; kind: string; ts_ms: number }>,
  mean: Float32Array,
): CodeBlock {
  const scratch = new Float32Array(rotatedDims(mean.length));
  return buildBlock(rows, codeWords(scratch.length), (v, out, at) => encodeRotated(v, 0, mean, out, at, scratch));
}
