import type { SearchTerm } from '../backend.js';
import type { Fts5Plan } from './fts5-planner.js';

/**
 * A word in more than half of the rows has no weight in FTS5's bm25: its idf, ln((N - n + 0.5) / (n + 0.5)), is
 * negative there and FTS5 clamps it to 1e-6. Above this share of the rows a term counts as weightless. The row count is
 * read with each plan and a frequency the planner kept from earlier (up to a minute) is at most the current one, since
 * appends only add rows: the share is a lower bound. The margin over a half covers rows deleted since (a purge).
 */
export const WEIGHTLESS_SHARE = 0.55;
/** Stores with fewer rows are searched as planned: their searches cost little, and a few appends move a share. */
export const WEIGHTLESS_MIN_ROWS = 1_000;
/** FTS5's floor on a phrase's idf (fts5_aux.c), and its bm25 k1: a phrase adds at most idf x (k1 + 1) to a row. */
const MIN_IDF = 1e-6;
const K1 = 1.2;

/** The plan without its weightless terms, and what its scores need to be the plan's. */
export interface LeanPlan {
  plan: Fts5Plan;
  /** The lean plan's bm25 times this is the plan's, less the weightless terms' share (at most `bound`). */
  scale: number;
  /**
   * Most the weightless terms add to a row's score in the plan (bm25 negated). A row holding only them scores at most
   * this, so the lean plan's top `limit` rows are the plan's when there are `limit` of them and the last scores above.
   */
  bound: number;
}

/**
 * Weightless terms out (issue #32): a query's plan without the terms FTS5's bm25 gives no weight, or null when it has
 * none or nothing would be left.
 *
 * Such a term only makes FTS5 read its doclist, which is most of the store's rows: to match it, and once more to count
 * its rows for bm25 (on bench/http-load.ts's store a module name in a path is in ~55 % of ~15K events; a query of a
 * rare word and that name took 1.9 ms to rank, the rare word alone 0.8). Without it each row scores what it did, less
 * at most 1e-6 x (k1 + 1) per phrase: the same ranking up to rows that tie within ~1e-5. Rows that held only the
 * weightless terms matched before and score about 0; the caller keeps the lean answer only when it has `limit` rows
 * scoring above that ({@link LeanPlan.bound}), else it runs the plan.
 *
 * Only single words of known frequency count (not a prefix term or a phrase of several tokens, whose frequency is an
 * estimate). `replan` plans the remaining terms as the planner does.
 */
export function withoutWeightless(plan: Fts5Plan, terms: readonly SearchTerm[], compile: (t: SearchTerm) => string, replan: (terms: SearchTerm[]) => Fts5Plan | null): LeanPlan | null {
  if (plan.docs < WEIGHTLESS_MIN_ROWS) return null;
  const weightless = new Set(plan.terms.filter((t) => !t.isPinned && Number.isFinite(t.df) && t.df > WEIGHTLESS_SHARE * plan.docs).map((t) => t.match));
  if (weightless.size === 0) return null;
  const kept = terms.filter((t) => !weightless.has(compile(t)));
  if (kept.length === 0) return null;
  const lean = replan(kept);
  if (lean === null) return null;
  // Each phrase's count in a plan: `R AND (R OR C)` counts the rare ones twice, `R` once.
  const counts = (p: Fts5Plan): Map<string, number> => {
    const hasCommon = p.terms.some((t) => !t.isRare);
    const out = new Map<string, number>();
    for (const t of p.terms) out.set(t.match, (out.get(t.match) ?? 0) + (t.isRare && hasCommon ? 2 : 1));
    return out;
  };
  const before = counts(plan);
  const after = counts(lean);
  // Every kept phrase must count the same times over (then one scale turns lean scores into the plan's).
  let scale: number | undefined;
  for (const [match, n] of after) {
    const ratio = (before.get(match) ?? 0) / n;
    if (scale === undefined) scale = ratio;
    else if (ratio !== scale) return null;
  }
  if (scale === undefined || !(scale > 0)) return null;
  let bound = 0;
  for (const match of weightless) bound += (before.get(match) ?? 0) * MIN_IDF * (K1 + 1);
  return { plan: lean, scale, bound };
}
