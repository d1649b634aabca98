/**
 * Stage 3 of recall (pipeline.ts): the full-text and vector rankings fused into one relevance per candidate.
 * Both sides are put on 0..1 first: full-text scores over the best one (r), cosine similarities min-max normalised
 * over the vector candidates (v); then relevance = (1 - w) x r + w x v at the vector weight w, and over the best
 * candidate. Two other rules (noisy-or, fts-first), a weight per question and feedback on the query vector were
 * measured and retired (docs/recall.md, "Retired techniques").
 */
import type { Retrieved } from './candidates.js';
import { HYBRID_VECTOR_WEIGHT, HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS, type ResolvedOptions } from './options.js';
import type { RecallQuery } from './parse.js';
import type { FusedRelevance, Retriever, RetrieverChoice } from './types.js';

/** The candidates' one relevance each, in the order they were found. */
export function fuseCandidates(q: RecallQuery, found: Retrieved, { retriever }: RetrieverChoice, o: ResolvedOptions): Map<string, FusedRelevance> {
  return fuseRelevance(found.text, found.vector, retriever, q.hasIdentifiers, o.vectorWeight);
}

/**
 * Relevance in 0..1 per candidate: full-text scores over the best one, vector similarities min-max
 * normalised over the vector candidates, fused by {@link HYBRID_VECTOR_WEIGHT}. Candidates keep the order
 * they were found in (full-text first), which only matters for ties.
 */
export function fuseRelevance(
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
  retriever: Retriever,
  hasIdentifiers: boolean,
  vectorWeight?: number,
): Map<string, FusedRelevance> {
  const hybrid = vectorWeight ?? (hasIdentifiers ? HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS : HYBRID_VECTOR_WEIGHT);
  const w = retriever === 'fts' ? 0 : retriever === 'vector' ? 1 : hybrid;
  const out = fuseScores(text, vector, w);
  // The best candidate scores 1, as with full-text alone, so the recency weight means the same under every
  // retriever (a fused best of 0.7 would have let recency count for more).
  let best = Number.EPSILON;
  for (const v of out.values()) if (v.relevance > best) best = v.relevance;
  for (const v of out.values()) v.relevance /= best;
  return out;
}

/**
 * The fusion of {@link fuseRelevance} at vector weight `w` (0..1), before the best is scaled to 1:
 * (1 - w) x full-text score / best full-text score + w x min-max normalised similarity. The LoCoMo benchmark
 * fuses its comparison rankings with it.
 */
export function fuseScores(
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
  w: number,
): Map<string, FusedRelevance> {
  const maxText = Math.max(...text.map((h) => h.relevance), Number.EPSILON);
  const sims = vector.map((h) => h.similarity);
  const lo = Math.min(...sims);
  const span = Math.max(...sims) - lo;
  const parts = new Map<string, { r: number; v: number; similarity: number | undefined }>();
  for (const h of text) parts.set(h.eventId, { r: Math.max(0, h.relevance) / maxText, v: 0, similarity: undefined });
  for (const h of vector) {
    const prior = parts.get(h.eventId);
    // One vector candidate (or all equal) gets full marks: nothing to normalise against.
    const v = span > 0 ? (h.similarity - lo) / span : 1;
    parts.set(h.eventId, { r: prior?.r ?? 0, v, similarity: h.similarity });
  }
  const out = new Map<string, FusedRelevance>();
  for (const [id, { r, v, similarity }] of parts) out.set(id, { relevance: (1 - w) * r + w * v, similarity });
  return out;
}
