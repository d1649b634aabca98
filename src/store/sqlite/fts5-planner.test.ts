import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Fts5Planner, MAX_SCORED_ROWS, prefixEnd, tokenize } from './fts5-planner.js';

let db: Database.Database;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE events_fts_vocab USING fts5vocab (events_fts, 'row');`);
});
afterEach(() => db.close());

function fill(rows: string[]): void {
  const insert = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  db.transaction(() => rows.forEach((body, i) => insert.run(i + 1, body, 'note')))();
}

function search(match: string): number[] {
  return (db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY bm25(events_fts) LIMIT 10').all(match) as Array<{ rowid: number }>).map(
    (r) => r.rowid,
  );
}

describe('tokenize', () => {
  it('matches the index tokenizer: lowercase, no diacritics, porter stems', () => {
    expect(tokenize('Retries --max-retries=7 Café connection')).toEqual(['retri', 'max', 'retri', '7', 'cafe', 'connect']);
  });
});

describe('Fts5Planner', () => {
  it('ORs all terms when they are rare enough to score every match', () => {
    fill(['alpha beta', 'gamma']);
    expect(new Fts5Planner(db).plan([{ text: 'alpha' }, { text: 'gamma' }])).toBe('"alpha" OR "gamma"');
  });

  it('lets the rare term select rows when a common one would exceed the scoring budget', () => {
    const rows = Array.from({ length: MAX_SCORED_ROWS + 50 }, (_, i) => `common filler row ${i}`);
    rows[10] = 'common zeppelin';
    rows[20] = 'zeppelin alone';
    fill(rows);
    const match = new Fts5Planner(db).plan([{ text: 'common' }, { text: 'zeppelin' }])!;
    expect(match).toBe('("zeppelin") AND ("zeppelin" OR "common")');
    // Only rows holding the rare word match, and the one holding both words ranks first.
    expect(search(match)).toEqual([11, 21]);
  });

  it('does not let a word no row holds be the only selecting term: the common words select then', () => {
    const rows = Array.from({ length: MAX_SCORED_ROWS + 50 }, (_, i) => `common filler row ${i}`);
    rows[7] = 'common filler timeout';
    fill(rows);
    const match = new Fts5Planner(db).plan([{ text: 'common' }, { text: 'absentword' }, { text: 'timeout' }])!;
    // The absent word stays (harmless in an OR); the rare word selects, and the common one still ranks.
    expect(match).toBe('("absentword" OR "timeout") AND ("absentword" OR "timeout" OR "common")');
    expect(search(match)).toEqual([8]);
    const onlyCommon = new Fts5Planner(db).plan([{ text: 'absentword' }, { text: 'filler' }])!;
    expect(onlyCommon).toBe('"absentword" OR "filler"');
    expect(search(onlyCommon)).toHaveLength(10);
  });

  it('always keeps identifiers and prefix terms among the selecting terms', () => {
    fill(Array.from({ length: MAX_SCORED_ROWS + 10 }, (_, i) => `src db pool ts ${i}`));
    const match = new Fts5Planner(db).plan([{ text: 'src/db/pool.ts' }, { text: '3f9a2c', isPrefix: true }])!;
    // Both select (the rarest first: no row begins with the prefix), however common the identifier's tokens are.
    expect(match).toBe('"3f9a2c" * OR "src/db/pool.ts"');
  });

  it('counts a prefix term\'s rows from the index terms it begins, its token stemmed as FTS5 stems a prefix query\'s', () => {
    fill(['E11000 duplicate key', 'e11000x and e11000 both', 'E11001 other', 'e1100 shorter', 'running late', 'the runner', 'rung', 'rust']);
    const plan = new Fts5Planner(db).planDetailed([{ text: 'E11000', isPrefix: true }])!;
    // e11000 (2 rows) + e11000x (1 row): the second row counted twice, an upper bound of the 2 rows the prefix matches.
    expect(plan.terms[0]).toMatchObject({ df: 3, isPinned: true });
    expect(plan.estimate).toBe(3);
    expect(search(plan.match)).toHaveLength(2);
    // `running` is stemmed to `run` in the query as in the index: run, runner and rung.
    const stemmed = new Fts5Planner(db).planDetailed([{ text: 'running', isPrefix: true }])!;
    expect(stemmed.terms[0]!.df).toBe(3);
    expect(search(stemmed.match)).toHaveLength(3);
    expect(new Fts5Planner(db).planDetailed([{ text: 'zz9999', isPrefix: true }])!.estimate).toBe(0);
  });

  it('plans a prefix term among a phrase by its rarest token, the prefix counted as a prefix', () => {
    fill(['build v1.2 done', 'build v1.25 done', 'v1 and 2 apart', 'build 2']);
    const plan = new Fts5Planner(db).planDetailed([{ text: 'v1.2', isPrefix: true }])!;
    // Tokens v1 (3 rows) and the prefix 2* (2 + 25: 4 rows): the rarer is v1.
    expect(plan.terms[0]!.df).toBe(3);
    expect(Number.isFinite(plan.estimate)).toBe(true);
  });

  it('ends a prefix\'s range at the next code point', () => {
    expect(prefixEnd('e11000')).toBe('e11001');
    expect(prefixEnd('abz')).toBe('ab{');
    expect(prefixEnd('caf\u00e9')).toBe('caf\u00ea');
    expect(prefixEnd('a\ud7ff')).toBe('a\ue000');
    expect(prefixEnd('a\u{10ffff}')).toBe('b');
  });

  it('returns null when no term has a word character', () => {
    expect(new Fts5Planner(db).plan([{ text: '--' }, { text: '::' }])).toBeNull();
  });
});
