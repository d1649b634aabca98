import type { SearchTerm } from '../backend.js';
import { LruCache } from '../../util/lru-cache.js';
import { compileTsQuery } from './tsquery.js';

/**
 * Most index rows (text chunks) a query lets PostgreSQL rank. Ranking every match dominates the query: on
 * 100K events a plain OR of a question's words took p95 144 ms. As in the SQLite planner, the rarest terms
 * whose combined frequency fits this budget decide which rows match, and every term still ranks them.
 */
export const MAX_RANKED_ROWS = 5_000;
const DF_CACHE_ENTRIES = 20_000;
const DF_CACHE_TTL_MS = 60_000;
/**
 * The count of a lone phrase, which the planner does not take: nothing reads it (a lone phrase is never bounded in
 * postgres-backend.ts, and it is the only term, so it is the rare one), and taking it cost as much as the search.
 * PostgreSQL's GIN index has no positions: counting a phrase rechecks the positions of every chunk holding all its
 * words, reading each chunk's tsvector out of TOAST. A phrase of three common words at 100K events ("or request
 * worker": 15,704 such chunks, 6 phrase matches) took 82-98 ms to count and as long again to search (EXPLAIN ANALYZE
 * in docs/recall.md, "Full-text at scale"); recall paid both.
 */
export const NOT_COUNTED = -1;

/** Counts, capped at `cap`, of the rows each compiled term matches (one round trip for all of them). */
export type CappedCounter = (termQueries: string[], cap: number) => Promise<number[]>;

/** A planned tsquery: the match, an estimate of its rows, the AND of all terms, and each term with its (capped) count. */
export interface TsQueryPlan {
  q: string;
  estimate: number;
  all: string;
  isSinglePhrase: boolean;
  /**
   * Each term's tsquery, how many chunks match it (counted up to MAX_RANKED_ROWS + 1), its text and whether it is one
   * of the rare terms that decide the matches.
   */
  terms: Array<{ q: string; df: number; text: string; isRare: boolean }>;
}

/**
 * Plans a tsquery `(R) & (R | C)`: R ORs the rarest terms within {@link MAX_RANKED_ROWS} (at least one some chunk holds; prefix
 * terms and multi-token identifiers always), C the common rest. Document frequencies are capped counts over
 * the GIN index (exact below the cap, "common" above it), cached for a minute.
 */
export class TsqueryPlanner {
  private readonly cache = new LruCache<string, { df: number; atMs: number }>(DF_CACHE_ENTRIES);

  constructor(private readonly count: CappedCounter) {}

  async plan(terms: SearchTerm[]): Promise<string | null> {
    return (await this.planDetailed(terms))?.q ?? null;
  }

  /**
   * The plan and an estimate of the rows it matches: the rare terms' summed capped counts, so any estimate above
   * {@link MAX_RANKED_ROWS} means "at least that many" (the bounded path in postgres-backend.ts uses it); a lone
   * phrase is not counted ({@link NOT_COUNTED}, unless `knownCount` has it). `knownCount`
   * gives a term's count when the caller has it (an identifier's, from the identifier index).
   */
  async planDetailed(terms: SearchTerm[], knownCount?: (term: SearchTerm) => number | undefined): Promise<TsQueryPlan | null> {
    const compiled = terms.flatMap((term) => {
      const q = compileTsQuery([term]);
      return q === null ? [] : [{ term, q }];
    });
    if (compiled.length === 0) return null;
    const lone = compiled.length === 1 ? compiled[0]! : undefined;
    if (lone !== undefined && lone.q.includes('<->')) {
      const df = knownCount?.(lone.term) ?? NOT_COUNTED;
      return { q: lone.q, estimate: df, all: `(${lone.q})`, isSinglePhrase: true, terms: [{ q: lone.q, df, text: lone.term.text, isRare: true }] };
    }
    // A term whose count is known (an identifier, from the identifier index) is not counted through the GIN index.
    const known = compiled.map((c) => knownCount?.(c.term));
    const counted = await this.frequencies(compiled.filter((_, i) => known[i] === undefined).map((c) => c.q));
    let next = 0;
    const dfs = known.map((k) => k ?? counted[next++]!);
    const all = compiled.map((c) => `(${c.q})`).join(' & ');
    const termPlans = compiled.map((c, i) => ({ q: c.q, df: dfs[i]!, text: c.term.text, isRare: true }));
    if (compiled.length === 1) return { q: compiled[0]!.q, estimate: dfs[0]!, all, isSinglePhrase: compiled[0]!.q.includes('<->'), terms: termPlans };
    const planned = compiled.map((c, i) => ({ ...c, df: dfs[i]! }));
    const byRarity = [...planned].sort((a, b) => a.df - b.df);
    const rare: typeof planned = [];
    let ranked = 0;
    for (const p of byRarity) {
      const isPinned = p.term.isPrefix === true || p.q.includes('<->');
      // A term no chunk holds selects nothing: it cannot stand in for the "at least one" selecting term, or the
      // query would match nothing at all (a word absent from the store beside common ones).
      if (!rare.some((r) => r.df > 0) || isPinned || ranked + p.df <= MAX_RANKED_ROWS) {
        rare.push(p);
        ranked += p.df;
      }
    }
    const common = planned.filter((p) => !rare.includes(p));
    planned.forEach((p, i) => (termPlans[i]!.isRare = rare.includes(p)));
    const r = rare.map((p) => p.q).join(' | ');
    if (common.length === 0) return { q: r, estimate: ranked, all, isSinglePhrase: false, terms: termPlans };
    return { q: `(${r}) & (${[...rare, ...common].map((p) => p.q).join(' | ')})`, estimate: ranked, all, isSinglePhrase: false, terms: termPlans };
  }

  private async frequencies(queries: string[]): Promise<number[]> {
    const now = Date.now();
    const out: Array<number | undefined> = queries.map((q) => {
      const hit = this.cache.get(q);
      return hit && now - hit.atMs < DF_CACHE_TTL_MS ? hit.df : undefined;
    });
    const missing = queries.filter((_, i) => out[i] === undefined);
    if (missing.length > 0) {
      const counts = await this.count(missing, MAX_RANKED_ROWS + 1);
      missing.forEach((q, j) => this.cache.set(q, { df: counts[j]!, atMs: now }));
    }
    return queries.map((q, i) => out[i] ?? this.cache.get(q)!.df);
  }
}
