import { EngramError } from '../errors.js';

/**
 * Greedy Maximal Marginal Relevance (Carbonell & Goldstein 1998; ENGRAM §5.2):
 *   MMR(e) = λ · score(e) − (1 − λ) · max over selected s of sim(e, s)
 * with scores normalised to [0, 1] so that λ means the same whatever scale the scores come on.
 */

export interface MmrCandidate {
  id: string;
  /** Higher is better; any non-negative scale (negative scores count as 0). */
  score: number;
  /** An embedding; cosine similarity is used when both candidates of a pair have one of the same length. */
  vector?: Float32Array;
  /** What the reader will see (an excerpt): lexical similarity and duplicate detection use it. */
  text: string;
}

export interface MmrOptions {
  /** Weight of relevance against novelty, 0..1. Default 0.7 (ENGRAM §5.2); 1 is plain ranking. */
  lambda?: number;
  /**
   * A candidate whose lexical similarity to an already selected one reaches this is dropped, not just
   * penalised. Default 0.9. Plain MMR only penalises: with λ = 0.7 a copy of the best hit still scores
   * 0.7 − 0.3 = 0.4 and beats every candidate scored below 0.57, so ten identical tool outputs would still
   * fill most of a pack. Lexical only, because embeddings of different texts on one topic are often
   * closer than 0.9 (the revised objective next to its predecessor). Above 1 nothing is dropped.
   */
  duplicateThreshold?: number;
}

export const MMR_DEFAULTS = { lambda: 0.7, duplicateThreshold: 0.9 } as const;

/**
 * Selects up to `k` candidates in greedy MMR order (the returned array is the selection order).
 * Deterministic: ties go to the higher raw score, then to the earlier position in `candidates`.
 * Returns fewer than `k` when the rest are duplicates of selected candidates.
 */
export function mmrSelect<T extends MmrCandidate>(candidates: readonly T[], k: number, options: MmrOptions = {}): T[] {
  const lambda = options.lambda ?? MMR_DEFAULTS.lambda;
  const duplicateThreshold = options.duplicateThreshold ?? MMR_DEFAULTS.duplicateThreshold;
  if (!(lambda >= 0 && lambda <= 1)) throw new EngramError('INVALID_INPUT', 'lambda: must be between 0 and 1', { field: 'lambda' });
  if (!(duplicateThreshold > 0)) {
    throw new EngramError('INVALID_INPUT', 'duplicateThreshold: must be positive', { field: 'duplicateThreshold' });
  }
  if (!Number.isInteger(k) || k < 0) throw new EngramError('INVALID_INPUT', 'k: must be a non-negative integer', { field: 'k' });

  const n = candidates.length;
  const maxScore = candidates.reduce((m, c) => Math.max(m, c.score), 0);
  const relevance = candidates.map((c) => (maxScore > 0 ? Math.max(c.score, 0) / maxScore : 0));
  const words = new Map<string, number>();
  const features = candidates.map((c) => shingles(c.text, words));
  const penalty = new Array<number>(n).fill(0);
  const isOut = new Array<boolean>(n).fill(false);
  const selected: T[] = [];

  while (selected.length < k) {
    let best = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      if (isOut[i]) continue;
      const value = lambda * relevance[i]! - (1 - lambda) * penalty[i]!;
      // Strictly greater, scanning in input order: an exact tie keeps the earlier candidate.
      if (value > bestValue || (value === bestValue && candidates[i]!.score > candidates[best]!.score)) {
        best = i;
        bestValue = value;
      }
    }
    if (best < 0) break;
    isOut[best] = true;
    const chosen = candidates[best]!;
    selected.push(chosen);
    for (let i = 0; i < n; i++) {
      if (isOut[i]) continue;
      const lexical = jaccard(features[i]!, features[best]!);
      if (lexical >= duplicateThreshold) {
        isOut[i] = true;
        continue;
      }
      const other = candidates[i]!;
      const sim = other.vector && chosen.vector && other.vector.length === chosen.vector.length ? Math.max(0, cosine(other.vector, chosen.vector)) : lexical;
      if (sim > penalty[i]!) penalty[i] = sim;
    }
  }
  return selected;
}

/**
 * Lexical similarity of two texts: Jaccard overlap of their word bigrams (single words for a one-word
 * text). Bigrams tell `pytest --max-retries=7 tests/test_api.py` from `... =5 tests/test_db.py` (0.27)
 * where bags of words call them alike (0.6). Case-insensitive; 1 for two texts without words.
 */
export function lexicalSimilarity(a: string, b: string): number {
  const words = new Map<string, number>();
  return jaccard(shingles(a, words), shingles(b, words));
}

/** Past every word number: a bigram's key is (first + 1) x this + second, so it never equals a lone word's. */
const WORD_SPACE = 2 ** 26;

/**
 * A text's word bigrams (its one word, for a one-word text) as numbers: each word numbered in `words`, shared by the
 * texts compared, so equal bigrams get equal numbers and a set of numbers costs less to build than one of strings.
 */
function shingles(text: string, words: Map<string, number>): Set<number> {
  const ids = text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0)
    .map((w) => {
      let id = words.get(w);
      if (id === undefined) {
        id = words.size;
        words.set(w, id);
      }
      return id;
    });
  if (ids.length < 2) return new Set(ids);
  const out = new Set<number>();
  for (let i = 1; i < ids.length; i++) out.add((ids[i - 1]! + 1) * WORD_SPACE + ids[i]!);
  return out;
}

function jaccard(a: Set<number>, b: Set<number>): number {
  if (a.size === 0 && b.size === 0) return 1;
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let common = 0;
  for (const x of small) if (large.has(x)) common++;
  return common / (a.size + b.size - common);
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return aa === 0 || bb === 0 ? 0 : ab / Math.sqrt(aa * bb);
}
