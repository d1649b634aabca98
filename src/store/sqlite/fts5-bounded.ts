import type Database from 'better-sqlite3';
import type { Fts5Plan } from './fts5-planner.js';
import { readVarints } from './fts5-varints.js';

/**
 * Estimated matching rows above which a search takes the bounded path. Below it FTS5 ranks every match with bm25
 * (exact). Above it that costs too much at a million events: bm25 scores every match and, per statement, counts
 * every match of each phrase again for its inverse document frequency (1M events, three common words: 1.65 s).
 */
export const BOUND_ABOVE_ROWS = 20_000;
/**
 * The bound when a phrase decides the matches (an identifier, a quoted phrase): its estimate is its rarest token's
 * frequency, far above its real matches, and the exact path evaluates the phrase twice (to match it, then again in
 * bm25 to count its rows), the bounded path once. With fewer matches than the candidates both find the same rows.
 */
export const BOUND_PHRASE_ABOVE_ROWS = 2_000;
/** Newest matches the bounded path scores: a few hundred, like a re-rank stage. */
export const BOUNDED_CANDIDATES = 400;

const K1 = 1.2;
const B = 0.75;

export interface BoundedHit {
  rowid: number;
  score: number;
}

/**
 * Most candidates the bounded path scores, in units of {@link BOUNDED_CANDIDATES}: the rows holding every term plus
 * each term's newest rows, rarest term first, until this many (a rare term's rows always come in whole).
 */
export const MAX_CANDIDATE_LISTS = 3;

/**
 * The bounded full-text path (docs/recall.md, "Full-text at scale"). A first pass asks FTS5 for newest matches,
 * `ORDER BY rowid DESC LIMIT n`, which FTS5 answers by walking its doclists from the end and stopping: first the
 * rows holding every term, then each term's own newest rows, rarest term first. No bm25 is run, so no per-phrase
 * counting. The candidates are then scored in JavaScript with FTS5's bm25 formula (k1 1.2, b 0.75, the same
 * document frequencies, row count and document lengths FTS5 keeps), each term counted once where the first pass
 * saw it in the row (a common term's list stops at the newest rows, so an older row may miss that term's small
 * share). A term matching fewer rows than the candidate count (an identifier, a phrase, a rare word) brings every
 * row holding it, whatever the common words of the query match: the rows found for it are exactly those the exact
 * path finds (an identifier or phrase found at 10K is found at 1M, alone or among common words); only their order
 * may differ where a term repeats in a row.
 */
export class Fts5BoundedSearch {
  private readonly totals: Database.Statement;
  private readonly sizes: Database.Statement;

  constructor(private readonly db: Database.Database) {
    this.totals = db.prepare('SELECT block FROM events_fts_data WHERE id = 1');
    this.sizes = db.prepare('SELECT id, sz FROM events_fts_docsize WHERE id IN (SELECT value FROM json_each(?))');
  }

  /**
   * Top `limit` rows for the plan, best first. `where` (with `params`) filters on the joined `events e`.
   */
  search(plan: Fts5Plan, limit: number, where: string[], params: unknown[], candidates = BOUNDED_CANDIDATES): BoundedHit[] {
    const want = Math.max(candidates, limit);
    const count = plan.terms.length;
    // Which of the query's terms each candidate holds, as far as the first pass saw.
    const holds = new Map<number, Set<number>>();
    const every = new Set(plan.terms.map((_, i) => i));
    if (count > 1) for (const rowid of this.newest(plan.allMatch, want, where, params)) holds.set(rowid, every);
    const byRarity = plan.terms.map((_, i) => i).sort((a, b) => plan.terms[a]!.df - plan.terms[b]!.df);
    for (const i of byRarity) {
      if (holds.size >= want * MAX_CANDIDATE_LISTS) break;
      for (const rowid of this.newest(plan.terms[i]!.match, want, where, params)) {
        const seen = holds.get(rowid);
        if (seen === every) continue;
        if (seen) seen.add(i);
        else holds.set(rowid, new Set([i]));
      }
    }
    return this.score(holds, plan.terms.map((t) => t.df), limit);
  }

  /** The newest `n` rows matching an FTS5 expression (and `where` on the joined `events e`), newest first. */
  newest(match: string, n: number, where: string[], params: unknown[]): number[] {
    const sql =
      where.length === 0
        ? 'SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY rowid DESC LIMIT ?'
        : `SELECT events_fts.rowid AS rowid FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
           WHERE events_fts MATCH ? AND ${where.join(' AND ')} ORDER BY events_fts.rowid DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(match, ...params, n) as Array<{ rowid: number }>;
    return rows.map((r) => r.rowid);
  }

  /**
   * Scores candidates with FTS5's bm25 formula, each term counted once where `holds` says the row has it; `dfs` are
   * the terms' document frequencies. The best `limit`, best first.
   */
  score(holds: ReadonlyMap<number, ReadonlySet<number>>, dfs: readonly number[], limit: number): BoundedHit[] {
    if (holds.size === 0) return [];
    const { docs, avgLength } = this.averages();
    const idf = dfs.map((d) => {
      const df = Number.isFinite(d) ? Math.min(d, docs) : 1;
      const v = Math.log((docs - df + 0.5) / (df + 0.5));
      return v > 0 ? v : 1e-6;
    });
    const rows = [...holds.keys()];
    const lengths = this.lengths(rows);
    const hits = rows.map((rowid) => {
      const norm = K1 * (1 - B + (B * (lengths.get(rowid) ?? avgLength)) / avgLength);
      const saturation = (K1 + 1) / (1 + norm);
      let weight = 0;
      for (const i of holds.get(rowid)!) weight += idf[i]!;
      return { rowid, score: weight * saturation };
    });
    hits.sort((a, b) => b.score - a.score || b.rowid - a.rowid);
    return hits.slice(0, limit);
  }

  /** Rows in the index and their average length in tokens (all columns), from FTS5's own totals record. */
  private averages(): { docs: number; avgLength: number } {
    const row = this.totals.get() as { block: Buffer } | undefined;
    if (!row) return { docs: 1, avgLength: 1 };
    const values = readVarints(row.block);
    const docs = Math.max(1, values[0] ?? 1);
    const tokens = values.slice(1).reduce((a, b) => a + b, 0);
    return { docs, avgLength: Math.max(1, tokens / docs) };
  }

  /** Each row's length in tokens over all columns (FTS5's docsize table: one varint per column). */
  private lengths(rowids: number[]): Map<number, number> {
    const rows = this.sizes.all(JSON.stringify(rowids)) as Array<{ id: number; sz: Buffer }>;
    return new Map(rows.map((r) => [r.id, readVarints(r.sz).reduce((a, b) => a + b, 0)]));
  }
}
