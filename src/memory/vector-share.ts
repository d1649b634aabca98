import { looksMultiHop } from './second-hop.js';

/**
 * How much say the vector side gets in one hybrid question (issue #13: hybrid never below full-text). On the LoCoMo
 * development split hybrid and full-text won and lost about as many questions at @10 and @25; the losses were
 * single-fact questions whose one evidence turn full-text held at rank 5-10 and the vectors' re-ordering of the same
 * candidates pushed to 11-16, the wins mostly multi-hop questions whose evidence names members of a category the
 * question names (word vectors relate "activities" to "swimming", full-text cannot). So the share follows the
 * question, by a rule rather than a tuned number:
 * - `fixed`: the same weight for every question.
 * - `multi-hop`: the full weight for questions that look multi-hop (second-hop.ts), half of it for the others.
 * - `agreement`: the weight scaled by how much the two rankings agree (the share of full-text's first
 *   {@link AGREEMENT_DEPTH} that vectors also rank there, times two, at most the weight): when they disagree, the vector
 *   side is reading another question, and mixing it in only moves the precise full-text hits down.
 */
export const VECTOR_SHARE_RULES = ['fixed', 'multi-hop', 'agreement'] as const;
export type VectorShareRule = (typeof VECTOR_SHARE_RULES)[number];

/** Candidates of each ranking compared by the `agreement` rule: the hits a default call returns. */
export const AGREEMENT_DEPTH = 10;

/** The vector weight for this question under `rule`, from the base weight `weight` (0..1). */
export function vectorShare(
  rule: VectorShareRule,
  weight: number,
  query: string,
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
): number {
  if (rule === 'multi-hop') return looksMultiHop(query) ? weight : weight / 2;
  if (rule === 'agreement') {
    const depth = Math.min(AGREEMENT_DEPTH, text.length, vector.length);
    if (depth === 0) return weight;
    const topText = new Set([...text].sort((a, b) => b.relevance - a.relevance).slice(0, depth).map((h) => h.eventId));
    const both = [...vector].sort((a, b) => b.similarity - a.similarity).slice(0, depth).filter((h) => topText.has(h.eventId)).length;
    return Math.min(weight, (2 * weight * both) / depth);
  }
  return weight;
}
