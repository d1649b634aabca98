import { addOuterUpper, mirrorUpper, symmetricEigen } from './linear-algebra.js';
import { matrixRow, PCA_WORDS, type GloveTables } from './glove-tables.js';
import { addTokenNgrams } from './ngram-hash.js';
import { tokenizeForEmbedding, type EmbeddingToken } from './tokenize.js';

/** The knobs of the sentence embedding. {@link DEFAULT_ENCODER_CONFIG} is what the built-in embedder uses. */
export interface EncoderConfig {
  /** SIF smoothing `a` in `a / (a + p(w))`. */
  sifA: number;
  /** Principal directions of the word vectors removed, after centring (all-but-the-top); 0 = neither. */
  removeWordComponents: number;
  /** Whether the sentence-level common component (SIF) is removed; needs a component from {@link computeCommonComponent}. */
  removeCommonComponent: boolean;
  /** Hashed character n-gram dimensions appended after the word-vector dimensions; 0 = none. */
  ngramDims: number;
  /** Character n-gram length. */
  ngramLength: number;
  /**
   * Which tokens add n-grams. `identifiers`: tokens the vocabulary lacks whole, or with inner structure
   * (`ECONNREFUSED`, `pool.ts`, `tau-bench`, `2023`); `all`: every token (lexical overlap of plain words too).
   */
  ngramScope: 'all' | 'identifiers';
  /** A token's n-gram mass relative to a typical word vector's norm (1 = an identifier weighs as much as a word). */
  ngramWeight: number;
}

/**
 * The default, literature defaults checked on the LoCoMo development split (ablation in
 * bench/results/locomo.md):
 * - SIF weights, a = 1e-3 (Arora et al. 2017 recommend 1e-4..1e-3; 1e-4 measured worse);
 * - centring and the top word-vector direction removed: "all-but-the-top" (Mu & Viswanath 2018), D = dims/100.
 *   Without it every pair of sentences shares GloVe's frequency direction (unrelated sentences scored 0.4-0.7
 *   and one paraphrase test failed); with it unrelated ones score ~0, at no measurable cost in recall;
 * - no sentence common component: from a generated corpus it cost ~5 points of vector recall@10;
 * - trigrams of every token, feature-hashed into 156 dimensions (256 in all), a token's trigrams weighing as
 *   much as its word vector: +4 points of vector recall@10 over trigrams of identifiers only (morphology:
 *   paint / painted / painting), and identifiers such as ECONNREFUSED / ECONNRESET match by spelling.
 */
export const DEFAULT_ENCODER_CONFIG: Readonly<EncoderConfig> = Object.freeze({
  sifA: 1e-3,
  removeWordComponents: 1,
  removeCommonComponent: false,
  ngramDims: 156,
  ngramLength: 3,
  ngramScope: 'all',
  ngramWeight: 1,
});

/**
 * Turns text into a unit vector, fastText-style: each token adds its SIF-weighted GloVe vector (or those of
 * its parts) to the word part and its character trigrams, feature-hashed and weighted the same, to the
 * n-gram part (a word outside the vocabulary weighs 1, as the rarest words do; a contraction adds no
 * n-grams, its parts carry it). The word part is centred and loses its top direction (a linear map, so
 * applying it to the sum equals applying it to each word); the two parts are concatenated unnormalised, so
 * a text of identifiers is matched mostly by spelling and prose mostly by meaning.
 */
export class SentenceEncoder {
  readonly dimensions: number;
  /** SIF weight of a vocabulary row ({@link sifWeight}); computed per word used, not for all 341K rows at start (~10 ms). */
  private readonly weight: (row: number) => number;
  /** Scratch for the word part; {@link wordPart} returns it. */
  private readonly words: Float64Array;
  private readonly grams: Float64Array;
  /** Mean norm of frequent words' vectors after post-processing: the scale of one word in the word part. */
  private readonly wordScale: number;

  constructor(
    private readonly tables: GloveTables,
    readonly config: Readonly<EncoderConfig> = DEFAULT_ENCODER_CONFIG,
    private readonly commonComponent?: Float32Array,
  ) {
    if (config.removeCommonComponent && !commonComponent) throw new Error('removeCommonComponent needs a common component');
    this.dimensions = tables.dimensions + config.ngramDims;
    const harmonic = harmonicNumber(tables.scales.length);
    this.weight = (row) => sifWeight(row, harmonic, config.sifA);
    this.words = new Float64Array(tables.dimensions);
    this.grams = new Float64Array(Math.max(1, config.ngramDims));
    this.wordScale = this.meanWordNorm();
  }

  /** Mean norm of every 10th of the {@link PCA_WORDS} most frequent words, centred and projected like the word part. */
  private meanWordNorm(): number {
    const { dimensions: dims, scales, mean, components } = this.tables;
    const k = this.config.removeWordComponents;
    const v = new Float64Array(dims);
    let sum = 0;
    let n = 0;
    for (let r = 0; r < Math.min(PCA_WORDS, scales.length); r += 10) {
      const row = matrixRow(this.tables, r);
      for (let d = 0; d < dims; d++) v[d] = row[d]! * scales[r]! - (k > 0 ? mean[d]! : 0);
      for (let c = 0; c < k; c++) project(v, components.subarray(c * dims, (c + 1) * dims));
      sum += norm(v);
      n++;
    }
    return n === 0 ? 1 : sum / n;
  }

  embed(text: string): Float32Array {
    const out = new Float32Array(this.dimensions);
    const tokens = tokenizeForEmbedding(text);
    const rows = tokens.map((t) => this.tables.vocabulary.get(t.text));
    const dims = this.tables.dimensions;
    const words = this.wordPartOf(tokens, rows, true);
    const hasGrams = this.config.ngramDims > 0 && this.ngramPartOf(tokens, rows);
    if (words) for (let d = 0; d < dims; d++) out[d] = words[d]!;
    if (hasGrams) {
      const f = this.config.ngramWeight * this.wordScale;
      for (let d = 0; d < this.config.ngramDims; d++) out[dims + d] = this.grams[d]! * f;
    }
    return normalizeInPlace(out);
  }

  /**
   * The word part: SIF-weighted sum, then centring and removal of the top word directions, then, when
   * configured and `withCommon`, removal of the common component. Undefined when no token is in the
   * vocabulary; the array is scratch space, overwritten by the next call.
   */
  wordPart(text: string, withCommon: boolean): Float64Array | undefined {
    const tokens = tokenizeForEmbedding(text);
    return this.wordPartOf(
      tokens,
      tokens.map((t) => this.tables.vocabulary.get(t.text)),
      withCommon,
    );
  }

  /** `rows[i]` is the vocabulary row of `tokens[i].text`, if any. */
  private wordPartOf(tokens: EmbeddingToken[], rows: Array<number | undefined>, withCommon: boolean): Float64Array | undefined {
    const dims = this.tables.dimensions;
    const acc = this.words;
    acc.fill(0);
    let total = 0;
    const { vocabulary, scales } = this.tables;
    const add = (r: number): void => {
      const w = this.weight(r);
      const f = w * scales[r]!;
      const row = matrixRow(this.tables, r);
      for (let d = 0; d < dims; d++) acc[d] = acc[d]! + f * row[d]!;
      total += w;
    };
    tokens.forEach((token, i) => {
      const r = rows[i];
      if (r !== undefined) {
        add(r);
        return;
      }
      for (const part of token.parts) {
        const p = vocabulary.get(part);
        if (p !== undefined) add(p);
      }
    });
    if (total === 0) return undefined;
    const k = this.config.removeWordComponents;
    const { mean, components } = this.tables;
    if (k > 0) for (let d = 0; d < dims; d++) acc[d] = acc[d]! - total * mean[d]!;
    for (let c = 0; c < k; c++) project(acc, components.subarray(c * dims, (c + 1) * dims));
    if (withCommon && this.config.removeCommonComponent && this.commonComponent) project(acc, this.commonComponent);
    return acc;
  }

  private ngramPartOf(tokens: EmbeddingToken[], rows: Array<number | undefined>): boolean {
    const grams = this.grams;
    grams.fill(0);
    let any = false;
    const isAll = this.config.ngramScope === 'all';
    tokens.forEach((token, i) => {
      const r = rows[i];
      if (token.isContraction && r === undefined) return;
      if (!isAll && !token.isIdentifier && r !== undefined) return;
      addTokenNgrams(token.text, this.config.ngramLength, r === undefined ? 1 : this.weight(r), grams);
      any = true;
    });
    return any;
  }
}

/**
 * SIF weights from vocabulary rank: no word counts ship with the package, but its words are in GloVe's
 * frequency order, so p(w) is estimated by Zipf's law, p(rank r) = 1 / (r * H_N) (r from 1, H_N the
 * harmonic number of the vocabulary size). With a = 1e-3 that makes "the" 0.01, rank 100 ~0.57, rank
 * 1,000 ~0.93 and rare words ~1.
 */
export function sifWeights(vocabulary: number, a: number): Float32Array {
  const harmonic = harmonicNumber(vocabulary);
  const weights = new Float32Array(vocabulary);
  for (let r = 0; r < vocabulary; r++) weights[r] = sifWeight(r, harmonic, a);
  return weights;
}

/** The SIF weight of row `r` (from 0) of {@link sifWeights}, the same float32 value, for one row. */
export function sifWeight(r: number, harmonic: number, a: number): number {
  const p = 1 / ((r + 1) * harmonic);
  return Math.fround(a / (a + p));
}

/** H_N, the harmonic number of a vocabulary of N words (Euler-Maclaurin, as {@link sifWeights} uses it). */
export function harmonicNumber(vocabulary: number): number {
  return Math.log(vocabulary) + 0.5772156649 + 1 / (2 * vocabulary);
}

/** Sentences in the generated reference corpus for the common component, and their lengths in words. */
export const REFERENCE_SENTENCES = 4096;
const REFERENCE_MIN_WORDS = 8;
const REFERENCE_MAX_WORDS = 30;
/** Words the reference corpus draws from: the most frequent alphabetic vocabulary words. */
const REFERENCE_VOCABULARY = 100_000;

/**
 * The common component of SIF: the first (uncentred) principal direction of the sentence vectors of a
 * reference corpus. No corpus ships, so one is generated deterministically: 4,096 "sentences" of 8-30
 * words drawn by Zipf's law (p ~ 1/rank) from the 100K most frequent alphabetic words, with a fixed-seed
 * PRNG. Under SIF's model the common component is the direction every sentence shares whatever its topic,
 * dominated by frequent words; bags drawn with real word frequencies estimate exactly that.
 */
export function computeCommonComponent(tables: GloveTables, config: Readonly<EncoderConfig>): Float32Array {
  const encoder = new SentenceEncoder(tables, { ...config, removeCommonComponent: false });
  const dims = tables.dimensions;
  const pool: number[] = [];
  const words: string[] = [];
  for (let r = 0; r < tables.vocabulary.size && pool.length < REFERENCE_VOCABULARY; r++) {
    const word = tables.vocabulary.word(r);
    if (!/^[a-z]+$/.test(word)) continue;
    pool.push(r);
    words[r] = word;
  }
  // Cumulative Zipf weights over the pool's ranks for inverse-CDF sampling.
  const cumulative = new Float64Array(pool.length);
  let sum = 0;
  pool.forEach((r, i) => {
    sum += 1 / (r + 1);
    cumulative[i] = sum;
  });
  const random = mulberry32(0x5eed_c0de);
  const cov = new Float64Array(dims * dims);
  for (let s = 0; s < REFERENCE_SENTENCES; s++) {
    const length = REFERENCE_MIN_WORDS + Math.floor(random() * (REFERENCE_MAX_WORDS - REFERENCE_MIN_WORDS + 1));
    const sentence: string[] = [];
    for (let i = 0; i < length; i++) sentence.push(words[pool[lowerBound(cumulative, random() * sum)]!]!);
    const v = encoder.wordPart(sentence.join(' '), false);
    if (!v) continue;
    const n = norm(v);
    if (n === 0) continue;
    addOuterUpper(cov, v, dims, 1 / (n * n));
  }
  const { vectors } = symmetricEigen(mirrorUpper(cov, dims), dims);
  return Float32Array.from(vectors.subarray(0, dims));
}

/** Removes the component of `v` along the unit vector `u`, in place. */
function project(v: Float64Array, u: Float32Array): void {
  let d = 0;
  for (let i = 0; i < u.length; i++) d += v[i]! * u[i]!;
  for (let i = 0; i < u.length; i++) v[i] = v[i]! - d * u[i]!;
}

function normalizeInPlace(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  if (s === 0) return v;
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * inv;
  return v;
}

function norm(v: Float64Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}

function lowerBound(sorted: Float64Array, x: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
