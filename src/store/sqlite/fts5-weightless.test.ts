import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import type { SearchTerm } from '../backend.js';
import { DEFAULT_CONTEXT_WEIGHT } from '../backend.js';
import { compileTerm, Fts5Planner, type Fts5Plan } from './fts5-planner.js';
import { WEIGHTLESS_MIN_ROWS, withoutWeightless } from './fts5-weightless.js';

/** A plan as the planner writes it, from terms with their frequencies (the rare ones first, within `rareUpTo`). */
function planOf(terms: Array<{ text: string; df: number; isPrefix?: boolean }>, docs: number, rareUpTo = 10_000): Fts5Plan {
  let scored = 0;
  const planned = terms.map((t) => {
    const isPinned = t.isPrefix === true || t.text.includes(' ');
    const isRare = isPinned || scored + t.df <= rareUpTo;
    if (isRare && Number.isFinite(t.df)) scored += t.df;
    return { match: compileTerm(t), df: t.df, text: t.text, isRare, isPinned };
  });
  const r = planned.filter((t) => t.isRare).map((t) => t.match);
  const all = planned.map((t) => t.match);
  const hasCommon = planned.some((t) => !t.isRare);
  return {
    match: hasCommon ? `(${r.join(' OR ')}) AND (${all.join(' OR ')})` : r.join(' OR '),
    estimate: 0,
    terms: planned,
    allMatch: all.join(' AND '),
    hasPhrase: false,
    docs,
  };
}

describe('withoutWeightless', () => {
  const dfs: Record<string, number> = { zeppelin: 40, gasket: 900, cache: 9_000, the: 12_000 };
  const replan = (terms: SearchTerm[], rareUpTo = 10_000) => planOf(terms.map((t) => ({ ...t, df: dfs[t.text] ?? Number.POSITIVE_INFINITY })), 15_000, rareUpTo);

  it('drops the words in more than 55 % of the rows, with the scale and bound that make its scores the plan’s', () => {
    const terms = [{ text: 'zeppelin' }, { text: 'cache' }];
    const plan = replan(terms);
    const lean = withoutWeightless(plan, terms, compileTerm, (t) => replan(t))!;
    expect(lean.plan.match).toBe('"zeppelin"');
    expect(lean.scale).toBe(1);
    // One phrase counted once, at most idf 1e-6 x (k1 + 1).
    expect(lean.bound).toBeCloseTo(2.2e-6, 12);
  });

  it('scales by 2 when the plan counted the rare terms twice and the lean plan has no common ones', () => {
    const terms = [{ text: 'zeppelin' }, { text: 'gasket' }, { text: 'the' }];
    // Rare within 1,000 rows: zeppelin and gasket rare, `the` common (`R AND (R OR C)`).
    const plan = replan(terms, 1_000);
    expect(plan.terms.map((t) => t.isRare)).toEqual([true, true, false]);
    const lean = withoutWeightless(plan, terms, compileTerm, (t) => replan(t, 1_000))!;
    expect(lean.plan.match).toBe('"zeppelin" OR "gasket"');
    expect(lean.scale).toBe(2);
  });

  it('leaves the plan alone on a small store, without weightless words, with nothing else, and for prefix terms', () => {
    const terms = [{ text: 'zeppelin' }, { text: 'cache' }];
    const small = { ...replan(terms), docs: WEIGHTLESS_MIN_ROWS - 1 };
    expect(withoutWeightless(small, terms, compileTerm, (t) => replan(t))).toBeNull();
    const rare = [{ text: 'zeppelin' }, { text: 'gasket' }];
    expect(withoutWeightless(replan(rare), rare, compileTerm, (t) => replan(t))).toBeNull();
    const onlyCommon = [{ text: 'cache' }, { text: 'the' }];
    expect(withoutWeightless(replan(onlyCommon), onlyCommon, compileTerm, (t) => replan(t))).toBeNull();
    // A prefix term's frequency is unknown (Infinity): never weightless.
    const prefix = [{ text: 'zeppelin' }, { text: 'a3f9', isPrefix: true }];
    expect(withoutWeightless(replan(prefix), prefix, compileTerm, (t) => replan(t))).toBeNull();
  });
});

describe('full-text search without weightless words (SQLite)', () => {
  let dir: string;
  let mem: Engram;
  let raw: Database.Database;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-weightless-'));
    mem = await openEngram({ db: join(dir, 'engram.db') });
    // 2,000 events: `module` in 80 % of them, `zeppelin` in 60 (with `module` in half of those), `gasket` in 3.
    const events = Array.from({ length: 2_000 }, (_, i) => {
      const words = [`row${i}`, `w${i % 37}`];
      if (i % 5 !== 0) words.push('module');
      if (i % 33 === 1) words.push('zeppelin', ...(i % 2 === 0 ? ['zeppelin'] : []));
      if (i === 7 || i === 700 || i === 1400) words.push('gasket');
      return { kind: 'note' as const, content: words.join(' ') };
    });
    for (let i = 0; i < events.length; i += 500) await mem.append(`s${i / 500}`, events.slice(i, i + 500));
    raw = new Database(join(dir, 'engram.db'), { readonly: true });
  });
  afterAll(async () => {
    raw.close();
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every match of the plan scored, as the backend's plain statement does. */
  function planned(terms: SearchTerm[], limit: number): Array<{ id: string; relevance: number }> {
    const plan = new Fts5Planner(raw).planDetailed(terms)!;
    const rows = raw
      .prepare(
        `SELECT e.id AS id, bm25(events_fts, 1.0, ${DEFAULT_CONTEXT_WEIGHT.toFixed(4)}) AS score FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
         WHERE events_fts MATCH ? ORDER BY score LIMIT ?`,
      )
      .all(plan.match, limit) as Array<{ id: string; score: number }>;
    return rows.map((r) => ({ id: r.id, relevance: -r.score }));
  }

  it("ranks the plan's events, relevances within 1e-5, when enough rows hold the other words", async () => {
    const terms = [{ text: 'zeppelin' }, { text: 'module' }];
    const plan = new Fts5Planner(raw).planDetailed(terms)!;
    expect(withoutWeightless(plan, terms, compileTerm, (t) => new Fts5Planner(raw).planDetailed(t))?.plan.match).toBe('"zeppelin"');
    const hits = await mem.store.searchText({ terms, limit: 20 });
    const expected = planned(terms, 20);
    expect(hits).toHaveLength(20);
    expect(hits.map((h) => h.relevance)).toEqual(expected.map((e) => expect.closeTo(e.relevance, 5)));
    // The lean search ran: a row that holds `module` too scores without its share (idf 1e-6), a few millionths less.
    const byId = new Map(expected.map((e) => [e.id, e.relevance]));
    expect(hits.some((h) => Math.abs(h.relevance - (byId.get(h.eventId) ?? h.relevance)) > 1e-9)).toBe(true);
    // The rows holding `zeppelin` twice and `module` first: bm25 ranks them so, and so does the lean search.
    const top = await mem.store.getEvents([hits[0]!.eventId]);
    expect(top[0]!.content).toMatch(/zeppelin zeppelin/);
    // Every hit holds the rare word (no row of `module` alone outranks them), in the plan too.
    for (const e of await mem.store.getEvents(hits.map((h) => h.eventId))) expect(e.content).toContain('zeppelin');
    expect(new Set(hits.map((h) => h.eventId))).toEqual(new Set(expected.map((e) => e.id)));
  });

  it('runs the plan when too few rows hold the other words: rows of the weightless word alone fill the answer', async () => {
    const terms = [{ text: 'gasket' }, { text: 'module' }];
    const hits = await mem.store.searchText({ terms, limit: 10 });
    const expected = planned(terms, 10);
    expect(hits).toHaveLength(10);
    expect(hits.map((h) => h.relevance)).toEqual(expected.map((e) => expect.closeTo(e.relevance, 9)));
    const contents = (await mem.store.getEvents(hits.map((h) => h.eventId))).map((e) => e.content);
    expect(contents.filter((c) => c.includes('gasket'))).toHaveLength(3);
    expect(contents.filter((c) => !c.includes('gasket') && c.includes('module'))).toHaveLength(7);
  });
});
