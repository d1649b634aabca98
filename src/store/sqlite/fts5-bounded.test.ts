import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Fts5BoundedSearch } from './fts5-bounded.js';
import { Fts5Planner } from './fts5-planner.js';

let db: Database.Database;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE events_fts_vocab USING fts5vocab (events_fts, 'row');
    CREATE TABLE events (rowid INTEGER PRIMARY KEY, id TEXT);`);
});
afterEach(() => db.close());

function fill(rows: string[]): void {
  const insert = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  db.transaction(() => rows.forEach((body, i) => insert.run(i + 1, body, 'note')))();
}

describe('Fts5BoundedSearch', () => {
  it('scores like bm25: the rarer word weighs, shorter rows above longer ones; a row holding only the rarer word is a candidate', () => {
    const filler = Array.from({ length: 50 }, (_, i) => `alpha filler ${i}`);
    fill([...filler, 'alpha beta', 'alpha beta and many more words in this longer row here', 'beta only', 'alpha beta gamma delta epsilon']);
    const plan = new Fts5Planner(db).planDetailed([{ text: 'alpha' }, { text: 'beta' }])!;
    const hits = new Fts5BoundedSearch(db).search(plan, 4, [], [], null, 3);
    // Candidates: the rows holding both words (51, 52, 54), then every row of the rarer word (53, "beta only").
    // "alpha" is in nearly every row, so it weighs almost nothing: the order is FTS5's own bm25 order.
    const exact = (db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY bm25(events_fts) LIMIT 4').all('alpha OR beta') as Array<{ rowid: number }>).map((r) => r.rowid);
    expect(hits.map((h) => h.rowid)).toEqual(exact);
    expect(exact).toEqual([51, 53, 54, 52]);
    expect(hits[0]!.score).toBeGreaterThan(hits[3]!.score);
  });

  it('stops each term at the candidate count: a common word brings only its newest rows', () => {
    const filler = Array.from({ length: 50 }, (_, i) => `alpha filler ${i}`);
    fill(filler);
    const plan = new Fts5Planner(db).planDetailed([{ text: 'alpha' }])!;
    const hits = new Fts5BoundedSearch(db).search(plan, 10, [], [], null, 5);
    expect(hits).toHaveLength(10);
    expect(Math.min(...hits.map((h) => h.rowid))).toBeGreaterThan(40);
  });

  it('tops up with rows holding some term when few hold all, ranked below those that hold all', () => {
    fill(['alpha one', 'beta two', 'alpha beta', 'beta three']);
    const plan = new Fts5Planner(db).planDetailed([{ text: 'alpha' }, { text: 'beta' }])!;
    const hits = new Fts5BoundedSearch(db).search(plan, 3, [], [], null, 3);
    expect(hits[0]!.rowid).toBe(3);
    expect(hits).toHaveLength(3);
  });
});
