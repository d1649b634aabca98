/**
 * Stage 3 of recall (pipeline.ts): the full-text and vector rankings fused into one relevance per candidate.
 * Both sides are put on 0..1 first: full-text scores over the best one (r), cosine similarities min-max normalised
 * over the vector candidates (v); then relevance = (1 - w) x r + w x v at the vector weight w, and over the best
 * candidate. Two other rules (noisy-or, fts-first) were measured and retired (docs/recall.md, "Fusion rules").
 */
import type { EventId } from '../../model/ids.js';
import type { EventFilter } from '../../store/backend.js';
import { feedbackVector, VECTOR_FEEDBACK_SOURCES } from '../vector-feedback.js';
import { vectorShare } from '../vector-share.js';
import { admitVectorHits, withoutDerived, type Retrieved } from './candidates.js';
import { HYBRID_VECTOR_WEIGHT, HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS, type ResolvedOptions } from './options.js';
import type { RecallQuery } from './parse.js';
import type { FusedRelevance, LoadedEvents, RecallDeps, Retriever, RetrieverChoice } from './types.js';

/**
 * The candidates' one relevance each, in the order they were found. The vector weight follows the question when a
 * vector-share rule asks (vector-share.ts); with vector feedback on (vector-feedback.ts) the best hits' centroid is
 * blended into the query vector, searched again, and the rankings fused once more.
 */
export async function fuseCandidates(
  deps: RecallDeps,
  q: RecallQuery,
  found: Retrieved,
  filter: EventFilter,
  { retriever, embedder }: RetrieverChoice,
  o: ResolvedOptions,
  events: LoadedEvents,
): Promise<Map<string, FusedRelevance>> {
  const { hasIdentifiers } = q;
  // A query naming identifiers keeps its fixed, lower weight (fuseRelevance).
  const vectorWeight = o.vectorWeight ?? (hasIdentifiers ? undefined : vectorShare(o.vectorShare, HYBRID_VECTOR_WEIGHT, q.text, found.text, found.firstVector));
  const fused = fuseRelevance(found.text, found.vector, retriever, hasIdentifiers, vectorWeight);
  if (!embedder || !found.queryVector || !(o.vectorFeedbackWeight > 0) || hasIdentifiers || fused.size === 0) return fused;
  const best = [...fused].sort((a, b) => b[1].relevance - a[1].relevance).slice(0, VECTOR_FEEDBACK_SOURCES).map(([id]) => id as EventId);
  const sources = [...(await deps.store.getVectors(embedder.name, best)).values()];
  if (sources.length === 0) return fused;
  const vector = feedbackVector(found.queryVector, sources, o.vectorFeedbackWeight);
  const again = await deps.store.searchVectors({ vector, model: embedder.name, filter, limit: found.vectorLimit });
  const admitted = await withoutDerived(deps, admitVectorHits(again, found.text, retriever, hasIdentifiers), events);
  return fuseRelevance(found.text, admitted, retriever, hasIdentifiers, vectorWeight);
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
