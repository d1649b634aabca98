import type { Fts5Plan } from './fts5-planner.js';

/** FTS5's bm25 constant k1: a phrase's share of a row's score is at most its idf x (k1 + 1), however often it occurs. */
const K1 = 1.2;
/**
 * Margin on the bound: the planner's document frequencies may be up to a minute old (fts5-planner.ts), while FTS5
 * scores with current ones. A rare-first answer stands only when its last row beats the bound by this factor.
 */
const BOUND_MARGIN = 1.1;
/** Rare-first is tried only when its rows are at most this share of the plan's: below it the saving pays for a retry. */
const MAX_ROW_SHARE = 0.6;

/** An FTS5 MATCH expression that scores fewer rows than the plan's, and when its answer is the plan's. */
export interface RareFirstAttempt {
  /** Matches the rows holding one of the rarest terms; its bm25 is the plan's, times `scale`, on every row. */
  match: string;
  /**
   * Most a row holding none of those terms can score (bm25 negated, times `scale`). The attempt's top `limit` rows
   * are the plan's when it found `limit` rows and the last of them scores above this.
   */
  bound: number;
  /** The attempt's bm25 over the plan's: 2 when the plan has no common terms (every phrase then counts twice), else 1. */
  scale: number;
}

/**
 * Rare terms first (issue #32): the plan's exact top rows while bm25 scores only the rows holding its rarest terms.
 *
 * FTS5 scores every row a query matches, and ranking is most of a search's CPU: on bench/http-load.ts's store
 * (~15K events, a small vocabulary) a query of a rare word and a common one matches half the store. But a phrase adds
 * at most idf x (k1 + 1) to a row's bm25 (FTS5's formula saturates in the phrase's frequency), and a word in half
 * the rows has an idf near 0. So a row holding only the common words cannot outrank a row holding a rare one: this is
 * MaxScore's argument (Turtle and Flood, 1995), checked on the answer instead of assumed.
 *
 * The attempt matches the rows holding one of the rarest terms and scores every phrase of the plan on them, with the
 * same multiset of phrases as the plan, so each row's bm25 is the plan's (the plan `R AND (R OR C)` counts the rare
 * terms R twice and the common ones C once; with no C it is `R`, whose bm25 doubled ranks the same). Any other row of
 * the plan holds only the remaining terms and scores at most their summed bounds. When the attempt's last row scores
 * above that (with a margin for document frequencies up to a minute old), its top rows are the plan's, up to rows
 * tied at the cut, whose order `ORDER BY score LIMIT` does not set either. Otherwise the caller runs the plan.
 *
 * Prefix terms and phrases of several tokens always stay in the attempt (their frequency is an estimate, so their
 * bound would be). `plan.docs` is the row count the planner read for the plan. Returns null when no split scores clearly fewer rows or the remaining terms could outscore it.
 */
export function rareFirst(plan: Fts5Plan, limit: number): RareFirstAttempt | null {
  const docs = plan.docs;
  if (docs <= 0) return null;
  const rare = plan.terms.filter((t) => t.isRare).sort((a, b) => a.df - b.df);
  const common = plan.terms.filter((t) => !t.isRare);
  // The rare terms' distinct phrases, rarest first: a term given twice (a word and the same word as an identifier)
  // is one phrase on both sides of a split.
  const phrases = [...new Set(rare.map((t) => t.match))];
  if (phrases.length < 2) return null;
  const planRows = phrases.reduce((sum, m) => sum + rare.find((t) => t.match === m)!.df, 0);
  const scale = common.length === 0 ? 2 : 1;
  const upper = (df: number) => idf(df, docs) * (K1 + 1);
  for (let p = 1; p < phrases.length; p++) {
    const firstPhrases = new Set(phrases.slice(0, p));
    const first = rare.filter((t) => firstPhrases.has(t.match));
    const rest = rare.filter((t) => !firstPhrases.has(t.match));
    // A pinned term left out of the attempt would need a bound its estimated frequency cannot give.
    if (rest.some((t) => t.isPinned || !Number.isFinite(t.df))) continue;
    const rows = phrases.slice(0, p).reduce((sum, m) => sum + first.find((t) => t.match === m)!.df, 0);
    if (rows < limit) continue;
    if (rows > planRows * MAX_ROW_SHARE) return null;
    // In the attempt's scale the rest of the rare terms count twice and the common ones once.
    const bound = (rest.reduce((sum, t) => sum + 2 * upper(t.df), 0) + common.reduce((sum, t) => sum + upper(t.df), 0)) * BOUND_MARGIN;
    // Worth a try when a row holding the least rare of the first terms once, at average length, would beat the
    // bound (it scores about 2 x that term's idf); else the attempt would likely fall back to the plan.
    if (bound >= 2 * idf(first[first.length - 1]!.df, docs)) continue;
    // Each phrase as often as in the plan (a term given twice counts twice there too).
    const all = [...first, ...rest, ...rest, ...common].map((t) => t.match);
    return { match: `(${first.map((t) => t.match).join(' OR ')}) AND (${all.join(' OR ')})`, bound, scale };
  }
  return null;
}

/** FTS5's bm25 idf of a phrase in `df` of `docs` rows (never below 1e-6, as FTS5 clamps it). */
function idf(df: number, docs: number): number {
  const v = Math.log((docs - Math.min(df, docs) + 0.5) / (Math.min(df, docs) + 0.5));
  return v > 1e-6 ? v : 1e-6;
}
