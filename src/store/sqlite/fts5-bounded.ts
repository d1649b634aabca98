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

/** Rowids from `lo` to `hi`, both included: where every row a search's filter admits lies (sqlite-visible-span.ts). */
export interface RowidSpan {
  lo: number;
  hi: number;
  /**
   * The store's largest rowid when the span was taken (sqlite-visible-span.ts): how many rows lie above the span,
   * which a newest-first walk reads past to reach it. Without it the walk is always newest first.
   */
  top?: number;
  /**
   * Which rows of the span the search's filter admitted, as far as tested: one search's walks read the same rows
   * again and again (every term's newest rows of one span). Made for one search, whose filter it stands for.
   */
  admitted?: Map<number, boolean>;
}

/**
 * Most candidates the bounded path scores, in units of {@link BOUNDED_CANDIDATES}: the rows holding every term plus
 * each term's newest rows, rarest term first, until this many (a rare term's rows always come in whole).
 */
export const MAX_CANDIDATE_LISTS = 3;

/** Rows of a span's walk read per row asked for before the rest is left to a joined statement (see `newestInSpan`). */
export const SPAN_WALK_PER_ROW = 16;

/**
 * A span is walked oldest first (see `oldestFirstInSpan`) when the rows below it plus this many times its own rows are
 * fewer than the rows above it. FTS5 skips a doclist's entries natively to reach a bound, and each of the span's
 * matches is read and filtered here, at some 10-25 times the cost of an entry skipped (1M events, a word in three
 * quarters of them: 45 ms to reach the first 5,000 rows newest first, 0.4 ms oldest first).
 */
export const OLDEST_FIRST_SPAN_FACTOR = 16;

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
  /** A span's walks, newest first from its last row and oldest first from its first (prepared once: one per term per search). */
  private readonly walkDown: Database.Statement;
  private readonly walkUp: Database.Statement;

  constructor(private readonly db: Database.Database) {
    this.totals = db.prepare('SELECT block FROM events_fts_data WHERE id = 1');
    this.sizes = db.prepare('SELECT id, sz FROM events_fts_docsize WHERE id IN (SELECT value FROM json_each(?))');
    this.walkDown = db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC').pluck();
    this.walkUp = db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ? AND rowid >= ? ORDER BY rowid ASC').pluck();
  }

  /**
   * Top `limit` rows for the plan, best first. `where` (with `params`) filters on the joined `events e`; `span`, when
   * given, holds every row the filter admits, and FTS5 reads only its rows.
   */
  search(plan: Fts5Plan, limit: number, where: string[], params: unknown[], span: RowidSpan | null = null, candidates = BOUNDED_CANDIDATES): BoundedHit[] {
    const want = Math.max(candidates, limit);
    const count = plan.terms.length;
    // Which of the query's terms each candidate holds, as far as the first pass saw.
    const holds = new Map<number, Set<number>>();
    const every = new Set(plan.terms.map((_, i) => i));
    if (count > 1) for (const rowid of this.newest(plan.allMatch, want, where, params, span)) holds.set(rowid, every);
    const byRarity = plan.terms.map((_, i) => i).sort((a, b) => plan.terms[a]!.df - plan.terms[b]!.df);
    for (const i of byRarity) {
      if (holds.size >= want * MAX_CANDIDATE_LISTS) break;
      for (const rowid of this.newest(plan.terms[i]!.match, want, where, params, span)) {
        const seen = holds.get(rowid);
        if (seen === every) continue;
        if (seen) seen.add(i);
        else holds.set(rowid, new Set([i]));
      }
    }
    return this.score(holds, plan.terms.map((t) => t.df), limit);
  }

  /** The newest `n` rows matching an FTS5 expression (and `where` on the joined `events e`), newest first; within `span` when given. */
  newest(match: string, n: number, where: string[], params: unknown[], span: RowidSpan | null = null): number[] {
    if (span) return this.newestInSpan(match, n, where, params, span);
    const sql =
      where.length === 0
        ? 'SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY rowid DESC LIMIT ?'
        : `SELECT events_fts.rowid AS rowid FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
           WHERE events_fts MATCH ? AND ${where.join(' AND ')} ORDER BY events_fts.rowid DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(match, ...params, n) as Array<{ rowid: number }>;
    return rows.map((r) => r.rowid);
  }

  /**
   * {@link newest} within a span. FTS5 walks a doclist newest first from the span's last row (a bound `rowid <= ?`
   * it takes; it still reads past the newer rows above it to get there, which costs nothing for the newest sessions),
   * but a lower bound does not stop it: it reads on to the doclist's start to learn that no row is left
   * (1M events, a word in a fifth of them: 14 ms for the 341 rows of a 1,600-row span, 0.2 ms when stopped at the
   * span's first row). So the walk is read here and stopped there, up to {@link SPAN_WALK_PER_ROW} rows per row
   * asked for, then filtered in one statement. A span whose rows the filter mostly rejects, so that the walk ends
   * before `n` are found, has the rest found by the joined statement below the last row read.
   */
  private newestInSpan(match: string, n: number, where: string[], params: unknown[], span: RowidSpan): number[] {
    if (span.hi < span.lo || n <= 0) return [];
    if (isOldSpan(span)) return this.oldestFirstInSpan(match, n, where, params, span);
    const read: number[] = [];
    let isWhole = true;
    for (const rowid of this.walkDown.iterate(match, span.hi) as IterableIterator<number>) {
      if (rowid < span.lo) break;
      if (read.length >= n * SPAN_WALK_PER_ROW) {
        isWhole = false;
        break;
      }
      read.push(rowid);
    }
    const kept = where.length === 0 ? read : this.admitted(read, where, params, span.admitted);
    if (kept.length >= n || isWhole) return kept.slice(0, n);
    const below = `SELECT events_fts.rowid AS rowid FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
           WHERE events_fts MATCH ? AND events_fts.rowid >= ? AND events_fts.rowid < ?${where.length > 0 ? ` AND ${where.join(' AND ')}` : ''}
           ORDER BY events_fts.rowid DESC LIMIT ?`;
    const rest = this.db.prepare(below).pluck().all(match, span.lo, read[read.length - 1]!, ...params, n - kept.length) as number[];
    return [...kept, ...rest];
  }

  /**
   * {@link newestInSpan} for a span far below the store's newest rows (a dormant project's sessions, an old session):
   * a newest-first walk would read past every newer match to reach it (FTS5 does not seek to a `rowid <= ?` bound, nor
   * to a `rowid >= ?` one). Walked oldest first instead, from the span's first row (reading past the older matches, fewer)
   * to its last, every match of the span read and filtered; the newest `n` of them. The same rows as the newest-first walk.
   */
  private oldestFirstInSpan(match: string, n: number, where: string[], params: unknown[], span: RowidSpan): number[] {
    const read: number[] = [];
    for (const rowid of this.walkUp.iterate(match, span.lo) as IterableIterator<number>) {
      if (rowid > span.hi) break;
      read.push(rowid);
    }
    read.reverse();
    return (where.length === 0 ? read : this.admitted(read, where, params, span.admitted)).slice(0, n);
  }

  /** The rows of `rowids` (newest first) that `where` admits on `events e`, in that order; `memo` keeps the answers. */
  private admitted(rowids: readonly number[], where: string[], params: unknown[], memo = new Map<number, boolean>()): number[] {
    const untested = rowids.filter((r) => !memo.has(r));
    if (untested.length > 0) {
      const sql = `SELECT e.rowid FROM events e WHERE e.rowid IN (SELECT value FROM json_each(?)) AND ${where.join(' AND ')}`;
      const ok = new Set(this.db.prepare(sql).pluck().all(JSON.stringify(untested), ...params) as number[]);
      for (const r of untested) memo.set(r, ok.has(r));
    }
    return rowids.filter((r) => memo.get(r) === true);
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

/** Whether a span is cheaper walked oldest first: see {@link OLDEST_FIRST_SPAN_FACTOR}. */
export function isOldSpan(span: RowidSpan): boolean {
  return span.top !== undefined && span.lo + OLDEST_FIRST_SPAN_FACTOR * (span.hi - span.lo) < span.top - span.hi;
}
