import { describe, expect, it } from 'vitest';
import { RECENT_SPAN_FACTOR, recentBound, splitNewestSql } from './pg-recent-chunks.js';

describe('recentBound', () => {
  it('spans the keys that hold the rows asked for, twice over, when matches spread evenly', () => {
    // 10,000 matches over 1M events: one in 100, so 400 rows lie in the newest 40,000 keys; twice that is asked.
    expect(recentBound(1_000_000, 10_000, 400)).toBe(1_000_000 - RECENT_SPAN_FACTOR * 40_000);
  });

  it('is 0 (the whole store) when the matches are too few for a recent part', () => {
    expect(recentBound(1_000_000, 500, 400)).toBe(0);
    expect(recentBound(300, 10_000, 400)).toBe(0);
    expect(recentBound(0, 0, 400)).toBe(0);
  });

  it('never spans fewer keys than the rows asked for', () => {
    expect(recentBound(1_000_000, 900_000, 400)).toBe(1_000_000 - 889);
    expect(recentBound(1_000_000, 100_000_000, 400)).toBe(1_000_000 - 400);
  });
});

describe('splitNewestSql', () => {
  it('orders each part newest first, recent part before the older, under one limit', () => {
    const sql = splitNewestSql('SELECT c.event_pk FROM t c', 'c.tsv @@ q', '$2', '$3');
    expect(sql).toBe(
      '(SELECT * FROM ((SELECT c.event_pk FROM t c WHERE c.tsv @@ q AND c.event_pk > $3 ORDER BY c.event_pk DESC LIMIT $2) UNION ALL ' +
        '(SELECT c.event_pk FROM t c WHERE c.tsv @@ q AND c.event_pk <= $3 ORDER BY c.event_pk DESC LIMIT $2)) n LIMIT $2)',
    );
  });
});
