import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VISIBLE_SESSION_SQL } from './sqlite-sessions.js';
import { Fts5VisibleFirst, VISIBLE_FIRST_BACKOFF } from './fts5-visible-first.js';

let db: Database.Database;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE TABLE events (rowid INTEGER PRIMARY KEY, id TEXT, session_id TEXT);
    CREATE TABLE sessions (id TEXT PRIMARY KEY, project TEXT, event_count INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE session_shares (session_id TEXT, project TEXT);
    INSERT INTO sessions (id, project) VALUES ('a1', 'alpha'), ('a2', 'alpha'), ('b1', 'beta'), ('c1', 'gamma');
    INSERT INTO session_shares VALUES ('c1', 'beta');`);
  // 300 rows: alpha's sessions hold most, beta one in 30 (its own and one shared with it), each row a different
  // mix of the query's words so the scores differ.
  const insertEvent = db.prepare('INSERT INTO events (rowid, id, session_id) VALUES (?, ?, ?)');
  const insertText = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 300; i++) {
      const session = i % 30 === 0 ? 'b1' : i % 45 === 0 ? 'c1' : i % 2 === 0 ? 'a1' : 'a2';
      const words = ['cache', ...Array.from({ length: 1 + (i % 7) }, () => 'filler'), ...(i % 3 === 0 ? ['worker'] : []), ...(i % 11 === 0 ? ['cache', 'cache'] : [])];
      insertEvent.run(i, `evt_${i}`, session);
      insertText.run(i, words.join(' '), 'note');
    }
    db.exec('UPDATE sessions SET event_count = (SELECT count(*) FROM events WHERE events.session_id = sessions.id)');
  })();
});
afterEach(() => db.close());

/** The plain statement the backend runs otherwise: every match joined and tested, then ranked. */
function joined(match: string, project: string, limit: number): Array<{ id: string; score: number }> {
  return db
    .prepare(
      `SELECT e.id AS id, bm25(events_fts, 1.0, 0.3000) AS score FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
       WHERE events_fts MATCH ? AND e.session_id IN (${VISIBLE_SESSION_SQL}) ORDER BY score, e.rowid LIMIT ?`,
    )
    .all(match, project, project, limit) as Array<{ id: string; score: number }>;
}

describe('Fts5VisibleFirst', () => {
  it('answers a project that sees most matches with the rows and scores of the plain join', () => {
    const first = new Fts5VisibleFirst(db);
    for (const match of ['cache', 'cache OR worker', 'worker']) {
      const hits = first.search(match, '0.3000', 'alpha', VISIBLE_SESSION_SQL, 20);
      expect(hits).not.toBeNull();
      expect(hits!.map((h) => h.score)).toEqual(joined(match, 'alpha', 20).map((r) => r.score));
      // Rows of equal score may come in another order; as sets per score they are the same rows.
      expect(new Set(hits!.map((h) => h.id))).toEqual(new Set(joined(match, 'alpha', 20).map((r) => r.id)));
      for (const h of hits!) expect(['a1', 'a2']).toContain(db.prepare('SELECT session_id FROM events WHERE id = ?').pluck().get(h.id));
    }
  });

  it('never answers with a row of a session the project may not read; shared sessions count as its own', () => {
    const visible = (project: string) => new Set(db.prepare(`SELECT id FROM events WHERE session_id IN (${VISIBLE_SESSION_SQL})`).pluck().all(project, project));
    for (const project of ['alpha', 'beta', 'gamma', 'nobody']) {
      for (const [match, limit] of [['cache', 3], ['worker', 40], ['cache OR worker', 10], ['filler', 1]] as const) {
        const hits = new Fts5VisibleFirst(db).search(match, '0.3000', project, VISIBLE_SESSION_SQL, limit);
        if (hits === null) continue; // the plain statement decides
        const seen = visible(project);
        for (const h of hits) expect(seen.has(h.id)).toBe(true);
        expect(hits.map((h) => h.score)).toEqual(joined(match, project, limit).map((r) => r.score));
      }
    }
    // beta sees 13 rows (10 of b1, 3 of c1 shared with it): 20 asked, 300 matches ranked beyond the 80 kept.
    expect(new Fts5VisibleFirst(db).search('cache', '0.3000', 'beta', VISIBLE_SESSION_SQL, 20)).toBeNull();
    expect(joined('cache', 'beta', 20)).toHaveLength(13);
  });

  it('after a short first pass, skips it for the next searches of that project only, then tries again', () => {
    const first = new Fts5VisibleFirst(db);
    expect(first.search('cache', '0.3000', 'beta', VISIBLE_SESSION_SQL, 20)).toBeNull();
    for (let i = 0; i < VISIBLE_FIRST_BACKOFF; i++) expect(first.search('worker filler', '0.3000', 'beta', VISIBLE_SESSION_SQL, 1)).toBeNull();
    // Backed off no more: 'worker' matches 100 rows, fewer than the 160 ranked for 40, so the pass is exact again.
    const again = first.search('worker', '0.3000', 'beta', VISIBLE_SESSION_SQL, 40);
    expect(again).not.toBeNull();
    expect(again!.map((h) => h.score)).toEqual(joined('worker', 'beta', 40).map((r) => r.score));
    // Another project was never held back.
    expect(first.search('cache', '0.3000', 'alpha', VISIBLE_SESSION_SQL, 5)).not.toBeNull();
  });

  it('keeps its statements compiled across searches: each context weight ranks with its own, rows added later are found', () => {
    const first = new Fts5VisibleFirst(db);
    const meta = (weight: string) =>
      db
        .prepare(`SELECT bm25(events_fts, 1.0, ${weight}) AS score FROM events_fts WHERE events_fts MATCH ? ORDER BY score LIMIT 5`)
        .pluck()
        .all('note') as number[];
    for (const weight of ['0.3000', '2.0000', '0.3000']) {
      expect(first.search('note', weight, 'alpha', VISIBLE_SESSION_SQL, 5)!.map((h) => h.score)).toEqual(meta(weight));
    }
    expect(meta('0.3000')).not.toEqual(meta('2.0000'));
    db.prepare('INSERT INTO events (rowid, id, session_id) VALUES (?, ?, ?)').run(301, 'evt_301', 'a1');
    db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)').run(301, 'zebra', 'note');
    expect(first.search('zebra', '0.3000', 'alpha', VISIBLE_SESSION_SQL, 5)!.map((h) => h.id)).toEqual(['evt_301']);
  });

  it('with fewer matches than it ranks, returns every visible match even when fewer than asked', () => {
    const first = new Fts5VisibleFirst(db);
    // 'worker' matches 100 rows; gamma sees c1 only (rows 45, 135, 225 hold 'worker'), so a limit of 40 ranks 160 > 100 rows.
    const hits = first.search('worker', '0.3000', 'gamma', VISIBLE_SESSION_SQL, 40);
    expect(hits).not.toBeNull();
    expect(hits!.map((h) => h.id).sort()).toEqual(joined('worker', 'gamma', 40).map((r) => r.id).sort());
    expect(hits!.length).toBeGreaterThan(0);
    expect(hits!.length).toBeLessThan(40);
  });

  it('answers a search held to a list of sessions with the rows and scores of the plain join, or leaves it to the join', () => {
    const inSessions = (match: string, ids: string[], limit: number) =>
      db
        .prepare(
          `SELECT e.id AS id, bm25(events_fts, 1.0, 0.3000) AS score FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
           WHERE events_fts MATCH ? AND e.session_id IN (${ids.map(() => '?').join(',')}) ORDER BY score, e.rowid LIMIT ?`,
        )
        .all(match, ...ids, limit) as Array<{ id: string; score: number }>;
    const first = new Fts5VisibleFirst(db);
    for (const [match, ids, limit] of [['cache', ['a1', 'a2'], 20], ['cache OR worker', ['a2', 'a1', 'c1'], 10], ['worker', ['a1'], 40]] as const) {
      const hits = first.searchInSessions(match, '0.3000', ids, limit);
      expect(hits).not.toBeNull();
      expect(hits!.map((h) => h.score)).toEqual(inSessions(match, [...ids], limit).map((r) => r.score));
      for (const h of hits!) expect(ids).toContain(db.prepare('SELECT session_id FROM events WHERE id = ?').pluck().get(h.id));
    }
    // b1 holds 10 of the 300 rows: a search of it goes to the join at once, without ranking the store first.
    expect(first.searchInSessions('cache', '0.3000', ['b1'], 20)).toBeNull();
    // a1 and b1 hold 160 of 300: the first pass runs. 'cache OR worker' ranked, 40 kept for 10 asked; were too few
    // of them a1's or b1's, this list (in any order) would skip the pass for a while.
    expect(first.searchInSessions('cache', '0.3000', ['b1', 'a1'], 10)).not.toBeNull();
    expect(first.searchInSessions('cache', '0.3000', ['a1', 'b1', 'b1'], 5)!.map((h) => h.score)).toEqual(inSessions('cache', ['a1', 'b1'], 5).map((r) => r.score));
  });
});
