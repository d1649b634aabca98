import type Database from 'better-sqlite3';
import { queryGrams } from '../identifier-grams.js';
import { BOUNDED_CANDIDATES, type BoundedHit, type Fts5BoundedSearch, type RowidSpan } from './fts5-bounded.js';
import type { Fts5Plan } from './fts5-planner.js';
import type { AppendedTail } from './sqlite-appended-tail.js';
import type { IdentifierTail, SqliteIdentifierIndex } from './sqlite-identifier-index.js';

/**
 * The bounded path for a query whose rare terms include an identifier of three or more tokens (docs/recall.md,
 * "Full-text at scale"), while the events past the index's watermark are few (MAX_IDENTIFIER_TAIL_EVENTS). The rows that match are the rare terms' rows, as in
 * the exact path's `R AND (R OR C)`: an identifier's from the identifier index (every row holding it, newest first,
 * up to the candidate count; no common token's postings read), another rare term's from FTS5's newest matches. Each
 * candidate is then checked for the other identifiers in the index and marked with the common terms FTS5's newest
 * rows show it holds, and scored as the bounded path scores (bm25's formula; an identifier's document frequency is
 * its real row count when all its rows were read). Events past the index's `watermark` (not indexed yet) are
 * matched by the identifier's full-text phrase instead, or on `held` (this connection's appends) when it holds them all. Returns null when no rare term is such an identifier.
 */
export function searchWithIdentifiers(
  db: Database.Database,
  index: SqliteIdentifierIndex,
  bounded: Fts5BoundedSearch,
  plan: Fts5Plan,
  limit: number,
  where: string[],
  params: unknown[],
  watermark: number,
  tailSize: number,
  held?: AppendedTail,
  span: RowidSpan | null = null,
): BoundedHit[] | null {
  const grams = plan.terms.map((t) => (t.isRare ? queryGrams(t.text) : null));
  if (!grams.some((g) => g !== null)) return null;
  const want = Math.max(BOUNDED_CANDIDATES, limit);
  const accept = filterRows(db, where, params);
  const holds = new Map<number, Set<number>>();
  const mark = (rowid: number, i: number): void => {
    const seen = holds.get(rowid);
    if (seen) seen.add(i);
    else holds.set(rowid, new Set([i]));
  };
  const dfs = plan.terms.map((t) => t.df);
  // The tail matched on this connection's held appends when they are all of it (sqlite-appended-tail.ts), else by the phrase.
  const tailOf = (match: string): IdentifierTail => ({
    watermark,
    match,
    size: tailSize,
    ...(held ? { held: (g: readonly number[]) => held.match(g, watermark, watermark + tailSize) } : {}),
  });
  plan.terms.forEach((t, i) => {
    if (!t.isRare) return;
    const g = grams[i];
    if (g) {
      const rows = index.newest(g, want, accept, tailOf(t.match), span);
      for (const r of rows) mark(r, i);
      // Every row holding it was read (and no filter hid any): its real document frequency.
      if (rows.length < want && where.length === 0) dfs[i] = Math.max(1, rows.length);
    } else for (const r of bounded.newest(t.match, want, where, params, span)) mark(r, i);
  });
  const candidates = [...holds.keys()];
  plan.terms.forEach((t, i) => {
    const g = t.isRare ? grams[i] : queryGrams(t.text);
    if (g) {
      for (const r of index.holding(g, candidates.filter((c) => !holds.get(c)!.has(i)), tailOf(t.match), span)) mark(r, i);
    } else if (!t.isRare) {
      // A common term: which candidates hold it, as far as its newest rows show (the bounded path's approximation).
      const have = new Set(candidates);
      for (const r of bounded.newest(t.match, want, where, params, span)) if (have.has(r)) mark(r, i);
    }
  });
  return bounded.score(holds, dfs, limit);
}

/** Keeps the rows the search's filters (on `events e`) admit; every row without filters. */
function filterRows(db: Database.Database, where: string[], params: unknown[]): (rowids: number[]) => Set<number> {
  if (where.length === 0) return (rowids) => new Set(rowids);
  const stmt = db.prepare(`SELECT e.rowid AS rowid FROM events e WHERE e.rowid IN (SELECT value FROM json_each(?)) AND ${where.join(' AND ')}`);
  return (rowids) => new Set((stmt.all(JSON.stringify(rowids), ...params) as Array<{ rowid: number }>).map((r) => r.rowid));
}
