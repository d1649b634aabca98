import type { TermNeighbour } from '../embedder.js';
import type { GloveTables } from './glove-tables.js';

/**
 * Nearest neighbours of a word in the GloVe tables (issue #13, query expansion): cosine similarity of the words'
 * vectors after centring on the frequent words' mean (Mu & Viswanath's post-processing, which the sentence encoder
 * also applies; raw GloVe vectors share a frequency direction that makes "go" closest to "you" and "the").
 *
 * Only the {@link NEIGHBOUR_WORDS} most frequent alphabetic words after the {@link COMMON_WORDS} are candidates: a neighbour rarer than that is
 * rarely a word a conversation or an agent's log uses, and the scan over them is the cost (one dot product per
 * candidate: ~2-4 ms per word here). The candidates' unit vectors are built on first use (~15 ms) and each word's
 * neighbours are kept in a small cache, so a repeated query term costs a map lookup.
 */

/** Candidate neighbours: the most frequent alphabetic words of the vocabulary (GloVe's rows are in frequency order). */
export const NEIGHBOUR_WORDS = 30_000;
/**
 * The most frequent words of the vocabulary (GloVe's 6B-token corpus) are function words and generic verbs and nouns
 * (have, go, make, people, new, years): their nearest words are other generic words ("go": come, get, take). So a
 * word among them has no neighbours, and none of them is anyone's neighbour.
 */
export const COMMON_WORDS = 500;
/** Words whose neighbours are cached. */
const CACHE_WORDS = 2_000;

export class TermNeighbours {
  private candidates: { rows: Int32Array; unit: Float32Array } | undefined;
  private readonly cache = new Map<string, TermNeighbour[]>();

  constructor(private readonly tables: GloveTables) {}

  /**
   * The `k` nearest candidate words to `term` (lower-cased), best first, with their cosine similarity; the term
   * itself is left out. Empty when the term is not in the vocabulary.
   */
  similar(term: string, k: number): TermNeighbour[] {
    const word = term.toLowerCase();
    const key = `${k}:${word}`;
    const cached = this.cache.get(key);
    if (cached) {
      // Refresh its place: the map's order is the eviction order.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    const found = this.compute(word, k);
    this.cache.set(key, found);
    if (this.cache.size > CACHE_WORDS) this.cache.delete(this.cache.keys().next().value!);
    return found;
  }

  private compute(word: string, k: number): TermNeighbour[] {
    const row = this.tables.vocabulary.get(word);
    if (row === undefined || row < COMMON_WORDS || k < 1) return [];
    const { rows, unit } = this.candidateVectors();
    const dims = this.tables.dimensions;
    const query = new Float32Array(dims);
    if (!this.unitVector(row, query)) return [];
    // The best k so far, in descending order; a linear insertion is cheaper than a heap for small k.
    const bestRows: number[] = [];
    const bestScores: number[] = [];
    for (let i = 0; i < rows.length; i++) {
      const base = i * dims;
      let s = 0;
      for (let d = 0; d < dims; d++) s += query[d]! * unit[base + d]!;
      if (bestScores.length === k && s <= bestScores[k - 1]!) continue;
      if (rows[i] === row) continue;
      let at = bestScores.length;
      while (at > 0 && bestScores[at - 1]! < s) at--;
      bestScores.splice(at, 0, s);
      bestRows.splice(at, 0, rows[i]!);
      if (bestScores.length > k) {
        bestScores.pop();
        bestRows.pop();
      }
    }
    return bestRows.map((r, i) => ({ term: this.tables.vocabulary.word(r), similarity: Math.round(bestScores[i]! * 1e4) / 1e4 }));
  }

  /** The centred unit vector of vocabulary row `r` into `out`; false for a zero vector. */
  private unitVector(r: number, out: Float32Array): boolean {
    const { dimensions: dims, matrix, scales, mean } = this.tables;
    const scale = scales[r]!;
    let sum = 0;
    for (let d = 0; d < dims; d++) {
      const x = matrix[r * dims + d]! * scale - mean[d]!;
      out[d] = x;
      sum += x * x;
    }
    if (sum === 0) return false;
    const inv = 1 / Math.sqrt(sum);
    for (let d = 0; d < dims; d++) out[d] = out[d]! * inv;
    return true;
  }

  private candidateVectors(): { rows: Int32Array; unit: Float32Array } {
    if (this.candidates) return this.candidates;
    const { vocabulary, dimensions: dims } = this.tables;
    const rows: number[] = [];
    for (let r = COMMON_WORDS; r < vocabulary.size && rows.length < NEIGHBOUR_WORDS; r++) if (isAlphabetic(vocabulary, r)) rows.push(r);
    const unit = new Float32Array(rows.length * dims);
    const scratch = new Float32Array(dims);
    rows.forEach((r, i) => {
      if (this.unitVector(r, scratch)) unit.set(scratch, i * dims);
    });
    this.candidates = { rows: Int32Array.from(rows), unit };
    return this.candidates;
  }
}

/** Whether row `r`'s word is lower-case ASCII letters only (no punctuation, digits or non-ASCII), read from its bytes. */
function isAlphabetic(vocabulary: GloveTables['vocabulary'], r: number): boolean {
  const start = vocabulary.offsets[r]!;
  const end = vocabulary.offsets[r + 1]!;
  if (end - start < 2) return false;
  for (let i = start; i < end; i++) {
    const c = vocabulary.bytes[i]!;
    if (c < 0x61 || c > 0x7a) return false;
  }
  return true;
}
