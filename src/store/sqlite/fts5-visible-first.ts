import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';

/** Rows the first pass ranks, per row asked for: a project that sees most of the store keeps most of them. */
export const VISIBLE_FIRST_FACTOR = 4;
/** A project whose first pass came up short skips it for this many searches (it would only add work), then tries again. */
export const VISIBLE_FIRST_BACKOFF = 16;
/** Distinct statements kept compiled (context weights are few; a caller varying it freely only recompiles). */
const MAX_CACHED_STATEMENTS = 32;

export interface VisibleFirstHit {
  id: string;
  score: number;
}

/**
 * Exact full-text ranking for an agent (`visibleToProject`, no other filter) without joining every match.
 *
 * The plain statement joins each match to `events` to test its session before ranking, which costs about as much
 * as the ranking itself (under bench/http-load.ts, 32 agents of one project at ~15K events, full-text search was a
 * quarter of the server's CPU, and this pass takes ~40 % off a common-word query). Here FTS5 first ranks the
 * matches alone and keeps the best `limit x 4`; only those are looked up in `events` and tested. The answer is
 * exact when at least `limit` of them are visible (any other visible match ranks at or below the last kept row:
 * the same rows as the join, up to ties at the cut, which `ORDER BY score LIMIT` leaves in no set order either
 * way) or when FTS5 had fewer matches than were kept (every match was tested). Otherwise the caller runs the plain
 * statement, and this project skips the first pass for its next {@link VISIBLE_FIRST_BACKOFF} searches, since a
 * project that sees a small part of the store would pay for both. A search held to a list of sessions
 * ({@link Fts5VisibleFirst.searchInSessions}) takes the same pass.
 */
export class Fts5VisibleFirst {
  private readonly backoff = new Map<string, number>();
  /**
   * Compiled statements by their SQL (a handful: one per context weight and visibility clause), so a search does
   * not compile its two statements again (~30 us each, of a recall's few ms under bench/http-load.ts).
   */
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  /** The top `limit` visible rows, best first, or null when the caller must run the full statement. */
  search(match: string, weight: string, project: string, visibleSql: string, limit: number): VisibleFirstHit[] | null {
    return this.firstPass(`project:${project}`, match, weight, limit, `session_id IN (${visibleSql})`, [project, project]);
  }

  /**
   * The same pass for a search held to a list of sessions (a hook's search of its project's earlier sessions: most
   * of the store, less the session asking): the top `limit` rows of those sessions, best first, or null.
   */
  searchInSessions(match: string, weight: string, sessionIds: readonly string[], limit: number): VisibleFirstHit[] | null {
    const ids = JSON.stringify([...new Set(sessionIds)].sort());
    // Only when the sessions hold at least 1 / VISIBLE_FIRST_FACTOR of the events: then the rows ranked first are
    // expected to hold `limit` of theirs. A search of a few sessions of a large store goes to the join at once.
    const held = this.statement('SELECT coalesce(sum(event_count), 0) FROM sessions WHERE id IN (SELECT value FROM json_each(?))').pluck().get(ids) as number;
    const stored = (this.statement('SELECT coalesce(max(rowid), 0) FROM events').pluck().get() as number) || 0;
    if (held * VISIBLE_FIRST_FACTOR < stored) return null;
    // The backoff's key: a digest, not the list (up to 500 ids, and up to 10,000 keys kept).
    const key = `sessions:${createHash('sha1').update(ids).digest('base64')}`;
    return this.firstPass(key, match, weight, limit, 'session_id IN (SELECT value FROM json_each(?))', [ids]);
  }

  private firstPass(key: string, match: string, weight: string, limit: number, testSql: string, testParams: unknown[]): VisibleFirstHit[] | null {
    const skip = this.backoff.get(key) ?? 0;
    if (skip > 0) {
      if (skip === 1) this.backoff.delete(key);
      else this.backoff.set(key, skip - 1);
      return null;
    }
    const kept = limit * VISIBLE_FIRST_FACTOR;
    const rank = this.statement(`SELECT rowid, bm25(events_fts, 1.0, ${weight}) AS score FROM events_fts WHERE events_fts MATCH ? ORDER BY score LIMIT ?`);
    const ranked = rank.all(match, kept) as Array<{ rowid: number; score: number }>;
    const test = this.statement(`SELECT rowid, id FROM events WHERE rowid IN (SELECT value FROM json_each(?)) AND ${testSql}`);
    const visible = test.all(JSON.stringify(ranked.map((r) => r.rowid)), ...testParams) as Array<{ rowid: number; id: string }>;
    const idOf = new Map(visible.map((r) => [r.rowid, r.id]));
    const hits: VisibleFirstHit[] = [];
    for (const r of ranked) {
      const id = idOf.get(r.rowid);
      if (id === undefined) continue;
      hits.push({ id, score: r.score });
      if (hits.length === limit) return hits;
    }
    if (ranked.length < kept) return hits;
    if (this.backoff.size > 10_000) this.backoff.clear();
    this.backoff.set(key, VISIBLE_FIRST_BACKOFF);
    return null;
  }

  private statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
