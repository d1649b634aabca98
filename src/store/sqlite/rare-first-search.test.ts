import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import { Prng } from '../../util/prng.js';
import { DEFAULT_CONTEXT_WEIGHT } from '../backend.js';
import { Fts5Planner } from './fts5-planner.js';
import { rareFirst } from './fts5-rare-first.js';

/**
 * The SQLite backend's full-text search with rare terms first (fts5-rare-first.ts), end to end through `searchText`:
 * the same events and relevances as the plan's own statement, with no filter and held to a list of sessions, whether
 * the attempt stands or the plan runs after it. The vocabulary's commonest words are in most events, so the search
 * also leaves them out (fts5-weightless.ts): relevances then differ by their clamped idf's share, under 1e-5.
 */

let dir: string;
let mem: Engram;
let raw: Database.Database;
const rng = new Prng(23);
/** A word of a 300-word vocabulary, Zipf: `w0` in most events, `w299` in a few. */
const word = () => `w${Math.min(299, Math.floor(Math.exp(rng.next() * Math.log(301)) - 1))}`;
const SESSIONS = ['s0', 's1', 's2', 's3'];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-rare-first-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  for (let batch = 0; batch < 60; batch++) {
    const events = Array.from({ length: 25 }, () => ({ kind: 'note' as const, content: Array.from({ length: rng.int(4, 30) }, word).join(' ') }));
    await mem.append(SESSIONS[batch % SESSIONS.length]!, events);
  }
  raw = new Database(join(dir, 'engram.db'), { readonly: true });
});
afterAll(async () => {
  raw.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The plan's statement as the backend ran it before rare terms first: every match of the plan scored. */
function planned(match: string, limit: number, sessionIds?: string[]): Array<{ id: string; relevance: number }> {
  const inSessions = sessionIds ? ` AND e.session_id IN (${sessionIds.map(() => '?').join(',')})` : '';
  const rows = raw
    .prepare(
      `SELECT e.id AS id, bm25(events_fts, 1.0, ${DEFAULT_CONTEXT_WEIGHT.toFixed(4)}) AS score FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
       WHERE events_fts MATCH ?${inSessions} ORDER BY score LIMIT ?`,
    )
    .all(match, ...(sessionIds ?? []), limit) as Array<{ id: string; score: number }>;
  return rows.map((r) => ({ id: r.id, relevance: -r.score }));
}

describe('full-text search with rare terms first', () => {
  it("gives the plan's events and relevances, with no filter and held to sessions, on queries the attempt answers and on those it leaves to the plan", async () => {
    const planner = new Fts5Planner(raw);
    let attempted = 0;
    for (let q = 0; q < 150; q++) {
      const terms = Array.from({ length: rng.int(2, 4) }, () => ({ text: word() }));
      const limit = rng.pick([5, 20, 40]);
      const sessionIds = q % 3 === 0 ? ['s0', 's1', 's2'] : q % 3 === 1 ? ['s3'] : undefined;
      const plan = planner.planDetailed(terms)!;
      if (rareFirst(plan, limit) !== null) attempted++;
      const hits = await mem.store.searchText({ terms, limit, ...(sessionIds ? { filter: { sessionIds: sessionIds as never } } : {}) });
      const expected = planned(plan.match, limit, sessionIds);
      expect(hits.map((h) => h.relevance)).toEqual(expected.map((e) => expect.closeTo(e.relevance, 5)));
      // The same events, but for those tied at the cut (within the weightless words' share).
      const last = expected.at(-1)?.relevance ?? 0;
      const above = (list: Array<{ id: string; relevance: number }>) => new Set(list.filter((h) => h.relevance > last + 1e-5).map((h) => h.id));
      expect(above(hits.map((h) => ({ id: h.eventId, relevance: h.relevance })))).toEqual(above(expected));
    }
    expect(attempted).toBeGreaterThan(30);
  });

  it("runs the plan when the rare rows' last one does not beat what the others could score", async () => {
    const other = await openEngram({ db: join(dir, 'bound.db') });
    try {
      // 12 long events hold the rare word once; 400 short ones repeat a commoner word: those outscore the rare rows.
      const filler = Array.from({ length: 300 }, (_, i) => `filler${i % 50}`).join(' ');
      const events = [
        ...Array.from({ length: 12 }, () => ({ kind: 'note' as const, content: `zeppelin ${filler}` })),
        ...Array.from({ length: 400 }, () => ({ kind: 'note' as const, content: 'gasket gasket gasket gasket gasket' })),
        ...Array.from({ length: 2600 }, (_, i) => ({ kind: 'note' as const, content: `plain row ${i}` })),
      ];
      for (let i = 0; i < events.length; i += 500) await other.append('s', events.slice(i, i + 500));
      const db = new Database(join(dir, 'bound.db'), { readonly: true });
      const plan = new Fts5Planner(db).planDetailed([{ text: 'zeppelin' }, { text: 'gasket' }])!;
      // The attempt is tried (the rare word alone, scored with both) ...
      expect(rareFirst(plan, 10)?.match).toBe('("zeppelin") AND ("zeppelin" OR "gasket" OR "gasket")');
      db.close();
      // ... but its rows would be the 12 long ones; the answer is the plan's: the short rows repeating the other word.
      const hits = await other.store.searchText({ terms: [{ text: 'zeppelin' }, { text: 'gasket' }], limit: 10 });
      expect(hits).toHaveLength(10);
      const texts = await other.store.getEvents(hits.map((h) => h.eventId));
      for (const e of texts) expect(e.content).toBe('gasket gasket gasket gasket gasket');
    } finally {
      await other.close();
    }
  });
});
