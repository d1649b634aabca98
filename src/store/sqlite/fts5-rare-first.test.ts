import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Prng } from '../../util/prng.js';
import { Fts5Planner } from './fts5-planner.js';
import { rareFirst } from './fts5-rare-first.js';

let db: Database.Database;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE events_fts_vocab USING fts5vocab (events_fts, 'row');`);
});
afterEach(() => db.close());

/** A word of a 400-word vocabulary: `w0` is in most rows, `w399` in a few (Zipf). */
function word(rng: Prng): string {
  const u = rng.next();
  return `w${Math.min(399, Math.floor(Math.exp(u * Math.log(401)) - 1))}`;
}

/** 3,000 rows of 5-40 words, the context column a few words too: frequencies from almost every row to a handful. */
function fill(rng: Prng): void {
  const insert = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 3000; i++) {
      const body = Array.from({ length: rng.int(5, 40) }, () => word(rng)).join(' ');
      insert.run(i, body, `note ${word(rng)} ${word(rng)}`);
    }
  })();
}

function ranked(match: string, limit: number): Array<{ rowid: number; score: number }> {
  return db.prepare('SELECT rowid, bm25(events_fts, 1.0, 0.3) AS score FROM events_fts WHERE events_fts MATCH ? ORDER BY score LIMIT ?').all(match, limit) as Array<{
    rowid: number;
    score: number;
  }>;
}

describe('rare terms first', () => {
  it("answers, when its last row beats the bound, with the plan's rows and scores while matching fewer rows", () => {
    const rng = new Prng(11);
    fill(rng);
    const planner = new Fts5Planner(db);
    let answered = 0;
    let tried = 0;
    let fewer = 0;
    for (let q = 0; q < 300; q++) {
      const terms = Array.from({ length: rng.int(2, 5) }, () => ({ text: word(rng) }));
      const plan = planner.planDetailed(terms)!;
      const limit = rng.pick([5, 10, 40]);
      const attempt = rareFirst(plan, limit);
      if (attempt === null) continue;
      tried++;
      const rows = ranked(attempt.match, limit);
      if (rows.length < limit || -rows[limit - 1]!.score <= attempt.bound) continue;
      answered++;
      const expected = ranked(plan.match, limit);
      // The same scores (the plan's, times the scale) ...
      expect(rows.map((r) => r.score / attempt.scale)).toEqual(expected.map((r) => expect.closeTo(r.score, 9)));
      // ... and the same rows, but for rows tied at the cut, which ORDER BY score LIMIT leaves in no set order.
      const last = expected[limit - 1]!.score;
      const above = (list: typeof rows, scale: number) => new Set(list.filter((r) => r.score / scale < last - 1e-9).map((r) => r.rowid));
      expect(above(rows, attempt.scale)).toEqual(above(expected, 1));
      const count = (m: string) => db.prepare('SELECT count(*) FROM events_fts WHERE events_fts MATCH ?').pluck().get(m) as number;
      if (count(attempt.match) < count(plan.match)) fewer++;
    }
    // The check above is not vacuous: most attempts stand, each matching fewer rows than the plan.
    expect(tried).toBeGreaterThan(60);
    expect(answered).toBeGreaterThan(tried * 0.8);
    expect(fewer).toBe(answered);
  });

  it('keeps the phrases as often as the plan has them: twice with common terms, the whole scaled by 2 without', () => {
    const plan = (common: boolean) => ({
      match: '',
      estimate: 0,
      allMatch: '',
      hasPhrase: false,
      docs: 10_000,
      terms: [
        { match: '"rare"', df: 50, text: 'rare', isRare: true, isPinned: false },
        { match: '"mid"', df: 4000, text: 'mid', isRare: true, isPinned: false },
        { match: '"mid"', df: 4000, text: 'mid', isRare: true, isPinned: false },
        ...(common ? [{ match: '"often"', df: 9000, text: 'often', isRare: false, isPinned: false }] : []),
      ],
    });
    // Plan `(rare OR mid OR mid) AND (rare OR mid OR mid OR often)`: rare 2x, mid 4x, often 1x.
    expect(rareFirst(plan(true), 10)).toEqual({ match: '("rare") AND ("rare" OR "mid" OR "mid" OR "mid" OR "mid" OR "often")', bound: expect.any(Number), scale: 1 });
    // Plan `rare OR mid OR mid`: rare 1x, mid 2x; the attempt doubles both.
    expect(rareFirst(plan(false), 10)).toMatchObject({ match: '("rare") AND ("rare" OR "mid" OR "mid" OR "mid" OR "mid")', scale: 2 });
  });

  it('declines when the rare rows cannot fill the answer, a pinned term would be left out, or the rest could outscore them', () => {
    const term = (text: string, df: number, isRare = true, isPinned = false) => ({ match: `"${text}"`, df, text, isRare, isPinned });
    const plan = (...terms: ReturnType<typeof term>[]) => ({ match: '', estimate: 0, allMatch: '', hasPhrase: false, docs: 10_000, terms });
    // 8 rows hold the rare word: 10 cannot come from them alone.
    expect(rareFirst(plan(term('rare', 8), term('often', 4000)), 10)).toBeNull();
    // A phrase's frequency is its rarest token's, not its rows: it is never left to a bound.
    expect(rareFirst(plan(term('rare', 50), term('src/db/pool.ts', 3000, true, true)), 10)).toBeNull();
    // Two words of similar frequency: a row of the second alone may outscore a row of the first.
    expect(rareFirst(plan(term('one', 300), term('two', 320)), 10)).toBeNull();
    // One distinct phrase: nothing to split.
    expect(rareFirst(plan(term('same', 300), term('same', 300), term('often', 6000, false)), 10)).toBeNull();
  });
});
