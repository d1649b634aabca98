/**
 * How hybrid recall fuses its full-text and vector rankings into one relevance per candidate (issue #13: hybrid
 * never below full-text). Both sides are put on 0..1 first: full-text scores over the best one (r), cosine
 * similarities min-max normalised over the vector candidates (v). Then, with the vector weight w:
 * - `weighted`: (1 - w) x r + w x v. Every candidate's place moves with its vectors, the confident full-text hits'
 *   too: on the LoCoMo development split the built-in word vectors pushed single-fact evidence that full-text held
 *   at rank 5-10 down to 11-16 (bench/results/locomo.md).
 * - `noisy-or`: 1 - (1 - r) x (1 - w x v), the probability that either side is right when each is read as one.
 *   The vectors speak in proportion to full-text's doubt: a hit full-text scores near its best keeps its place,
 *   a weak or missing full-text match can be lifted by as much as w. No threshold to tune.
 * - `fts-first`: the full-text hits scoring at least {@link FTS_CONFIDENT_SHARE} of the best keep full-text order
 *   above every other candidate; the others are fused as `weighted` below them. Vectors fill and reorder only
 *   what full-text is unsure of.
 */
export const FUSION_RULES = ['weighted', 'noisy-or', 'fts-first'] as const;
export type FusionRule = (typeof FUSION_RULES)[number];

/** Share of the best full-text score from which the `fts-first` rule treats a full-text hit as confident. */
export const FTS_CONFIDENT_SHARE = 0.5;

/** One fused candidate: its relevance (0..1) and its cosine similarity when the vector side ranked it. */
export interface FusedRelevance {
  relevance: number;
  similarity: number | undefined;
}

/**
 * Fuses the two rankings under `rule` at vector weight `w` (0..1), before the best is scaled to 1. Candidates keep
 * the order they were found in (full-text first), which only matters for ties.
 */
export function fuseByRule(
  rule: FusionRule,
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
  w: number,
  confidentShare = FTS_CONFIDENT_SHARE,
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
  for (const [id, { r, v, similarity }] of parts) out.set(id, { relevance: fused(rule, r, v, w, confidentShare), similarity });
  return out;
}

function fused(rule: FusionRule, r: number, v: number, w: number, confidentShare: number): number {
  if (rule === 'noisy-or') return 1 - (1 - r) * (1 - w * v);
  const weighted = (1 - w) * r + w * v;
  if (rule === 'weighted' || w === 0) return weighted;
  // fts-first: confident hits keep r (>= confidentShare); the rest are scaled into [0, confidentShare], below them.
  return r >= confidentShare ? r : confidentShare * weighted;
}
