import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Fts5BoundedSearch, isOldSpan, OLDEST_FIRST_SPAN_FACTOR, SPAN_WALK_PER_ROW, type RowidSpan } from './fts5-bounded.js';

let db: Database.Database;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE TABLE events (rowid INTEGER PRIMARY KEY, session_id TEXT NOT NULL);`);
});
afterEach(() => db.close());

/** Rows 1..n: `common` in every row, `sometimes` in every third; session `big` but for `small`'s rows. */
function fill(n: number, small: (rowid: number) => boolean): void {
  const fts = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  const ev = db.prepare('INSERT INTO events (rowid, session_id) VALUES (?, ?)');
  db.transaction(() => {
    for (let r = 1; r <= n; r++) {
      fts.run(r, `common word ${r % 3 === 0 ? 'sometimes' : 'other'}`, 'note');
      ev.run(r, small(r) ? 'small' : 'big');
    }
  })();
}

const where = ['e.session_id = ?'];
const params = ['small'];
const span = (lo: number, hi: number): RowidSpan => ({ lo, hi, admitted: new Map() });

describe('Fts5BoundedSearch.newest within a span', () => {
  it('gives the rows the joined walk gives, newest first, for every limit', () => {
    fill(3_000, (r) => r >= 2_000 && r <= 2_400 && r % 2 === 0);
    const search = new Fts5BoundedSearch(db);
    for (const match of ['"common"', '"sometimes"', '"common" AND "sometimes"']) {
      for (const n of [1, 10, 150, 400]) {
        expect(search.newest(match, n, where, params, span(2_000, 2_400))).toEqual(search.newest(match, n, where, params));
      }
    }
  });

  it('stops at the span: no row below its first or above its last', () => {
    fill(1_000, (r) => r >= 500 && r <= 520);
    const rows = new Fts5BoundedSearch(db).newest('"common"', 400, [], [], span(500, 520));
    expect(rows).toEqual(Array.from({ length: 21 }, (_, i) => 520 - i));
  });

  it('finds the rest below the rows it walked when the filter rejects most of a wide span', () => {
    // The small session's rows are few and far apart: the walk reads its bound of rows and finds fewer than asked.
    const holders = (r: number) => r % 500 === 0;
    fill(20_000, holders);
    const search = new Fts5BoundedSearch(db);
    const n = 20;
    expect(20_000 / 500).toBeGreaterThan(n);
    expect(n * SPAN_WALK_PER_ROW).toBeLessThan(20_000);
    const rows = search.newest('"common"', n, where, params, span(500, 20_000));
    expect(rows).toEqual(Array.from({ length: n }, (_, i) => 20_000 - 500 * i));
    expect(rows).toEqual(search.newest('"common"', n, where, params));
  });

  it('an empty span finds nothing', () => {
    fill(100, () => false);
    expect(new Fts5BoundedSearch(db).newest('"common"', 10, where, params, span(1, 0))).toEqual([]);
  });

  it('keeps each row it tested in the span\'s memo, so a second walk of those rows asks the filter nothing', () => {
    fill(2_000, (r) => r > 1_900);
    const search = new Fts5BoundedSearch(db);
    const s = span(1_901, 2_000);
    const first = search.newest('"common"', 50, where, params, s);
    expect(s.admitted!.size).toBeGreaterThanOrEqual(50);
    // Poison the filter: the answer now comes from the memo alone.
    const second = search.newest('"common"', 50, ['e.session_id = ?'], ['nobody'], s);
    expect(second).toEqual(first);
  });

  it('walks a span far below the newest rows oldest first, and gives the same rows as newest first', () => {
    // The small session's rows lie among the first 1,000 of 20,000: 19,000 rows above them, 100 below.
    fill(20_000, (r) => r > 100 && r <= 1_100 && r % 3 !== 1);
    const search = new Fts5BoundedSearch(db);
    const old = (lo: number, hi: number): RowidSpan => ({ ...span(lo, hi), top: 20_000 });
    expect(isOldSpan(old(101, 1_100))).toBe(true);
    for (const match of ['"common"', '"sometimes"', '"common" AND "sometimes"']) {
      for (const n of [1, 10, 150, 1_000]) {
        const expected = search.newest(match, n, where, params);
        expect(search.newest(match, n, where, params, old(101, 1_100))).toEqual(expected);
        // The same rows newest first (no `top`: the span's position unknown).
        expect(search.newest(match, n, where, params, span(101, 1_100))).toEqual(expected);
      }
    }
    // Unfiltered: every row of the span, newest first, and nothing outside it.
    expect(search.newest('"common"', 5_000, [], [], old(101, 1_100))).toEqual(Array.from({ length: 1_000 }, (_, i) => 1_100 - i));
  });

  it('walks oldest first only where the rows below a span and its own rows, weighted, are fewer than the rows above it', () => {
    const at = (lo: number, hi: number, top: number): boolean => isOldSpan({ lo, hi, top });
    // A 100-row span: the walk reads it whole oldest first, so it counts OLDEST_FIRST_SPAN_FACTOR times.
    const width = 100;
    const weight = OLDEST_FIRST_SPAN_FACTOR * (width - 1);
    expect(at(1, width, 1_000_000)).toBe(true);
    expect(at(500_000, 500_000 + width - 1, 1_000_000)).toBe(false);
    expect(at(990_000, 990_000 + width - 1, 1_000_000)).toBe(false);
    // The boundary: rows below plus the weighted span against the rows above.
    const lo = 100_000;
    const top = lo + weight + (width - 1) + lo + 1;
    expect(at(lo, lo + width - 1, top)).toBe(true);
    expect(at(lo, lo + width - 1, top - 1)).toBe(false);
    expect(isOldSpan({ lo: 1, hi: width })).toBe(false);
  });
});
