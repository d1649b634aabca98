import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import type { SessionId } from '../../model/ids.js';
import { BOUND_ABOVE_ROWS, isOldSpan } from './fts5-bounded.js';
import { SPAN_MIN_EVENTS } from '../visible-span.js';
import { intersectSpans, SqliteVisibleSpan } from './sqlite-visible-span.js';

/**
 * A store where project `p` sees a small part: its session `mine` (24 events, 8 holding `zebra`, spread over the
 * store's whole history) and `lent` (another project's session shared with it, 1 event holding `zebra`), among
 * 24,000 events of `other`,
 * every one holding `common` (more than the bound's rows, so the search of `common zebra` is bounded to the span).
 */
describe('the rowid span of a search held to a few sessions (SQLite)', () => {
  let dir: string;
  let mem: Engram;
  let raw: Database.Database;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-span-'));
    mem = await openEngram({ db: join(dir, 'engram.db') });
    for (let batch = 0; batch < 48; batch++) {
      const events = Array.from({ length: 500 }, (_, i) => ({ kind: 'note' as const, content: `common filler ${batch} ${i % 41}${i % 8 === 0 ? ' at src/orders/client.ts:385' : ''}` }));
      await mem.append('big', events, { project: 'other' });
      const at = batch % 4 === 0 ? ' failed at src/orders/client.ts:385' : '';
      if (batch % 2 === 0) await mem.append('mine', { kind: 'note', content: `common mine ${batch} ${batch % 6 === 0 ? 'zebra' : 'plain'}${at}` }, { project: 'p' });
      if (batch === 40) await mem.append('lent', { kind: 'note', content: 'common lent zebra' }, { project: 'other' });
    }
    await mem.store.shareSession({ sessionId: 'lent' as SessionId, project: 'p', sharedBy: 'local', tsMs: Date.now() });
    // The identifier index caught up, as a server's worker keeps it.
    await mem.maintainTextIndex();
    raw = new Database(join(dir, 'engram.db'), { readonly: true });
  });
  afterAll(async () => {
    raw.close();
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bounds = (sessions: string[]) =>
    raw.prepare(`SELECT min(rowid) AS lo, max(rowid) AS hi FROM events WHERE session_id IN (${sessions.map(() => '?').join(',')})`).get(...sessions) as { lo: number; hi: number };

  it("spans a session's events, a list's, and a project's own and shared sessions", () => {
    const spans = new SqliteVisibleSpan(raw);
    expect(spans.ofSessions(['mine'])).toMatchObject(bounds(['mine']));
    expect(spans.ofSessions(['mine', 'lent', 'mine'])).toMatchObject(bounds(['mine', 'lent']));
    expect(spans.ofProject('p')).toMatchObject(bounds(['mine', 'lent']));
    // The first and last turns' rowids are the least and greatest: rowids grow with the turns.
    const { lo, hi } = bounds(['mine']);
    expect(hi - lo).toBeGreaterThan(20_000);
  });

  it('gives no span where the sessions hold a large part of the store, and an empty one where they hold nothing', () => {
    const spans = new SqliteVisibleSpan(raw);
    expect(spans.ofSessions(['big'])).toBeNull();
    expect(spans.ofProject('other')).toBeNull();
    expect(spans.ofSessions(['no-such-session'])).toMatchObject({ lo: 1, hi: 0 });
    expect(spans.ofProject('nobody')).toMatchObject({ lo: 1, hi: 0 });
  });

  it('intersects spans, null standing for no bound', () => {
    expect(intersectSpans(null, null)).toBeNull();
    expect(intersectSpans({ lo: 5, hi: 9 }, null)).toMatchObject({ lo: 5, hi: 9 });
    expect(intersectSpans({ lo: 5, hi: 9 }, { lo: 7, hi: 20 })).toMatchObject({ lo: 7, hi: 9 });
  });

  it("a search held to the project finds its sessions' rare-word events first, and nothing else", async () => {
    const terms = [{ text: 'common' }, { text: 'zebra' }];
    expect((raw.prepare("SELECT count(*) FROM events WHERE content LIKE '%common%'").pluck().get() as number) > BOUND_ABOVE_ROWS).toBe(true);
    /** The events of these sessions that the full-text index finds `zebra` in. */
    const zebrasIn = (sessions: string[]) =>
      (
        raw
          .prepare(`SELECT e.id FROM events_fts JOIN events e ON e.rowid = events_fts.rowid WHERE events_fts MATCH 'zebra' AND e.session_id IN (${sessions.map(() => '?').join(',')})`)
          .pluck()
          .all(...sessions) as string[]
      ).sort();
    expect(zebrasIn(['mine', 'lent'])).toHaveLength(9);
    for (const [filter, sessions] of [
      [{ visibleToProject: 'p' }, ['mine', 'lent']],
      [{ sessionIds: ['mine', 'lent'] }, ['mine', 'lent']],
      [{ visibleToProject: 'p', sessionIds: ['mine'] }, ['mine']],
    ] as const) {
      const hits = await mem.store.searchText({ terms, filter: filter as never, limit: 12 });
      const events = await mem.store.getEvents(hits.map((h) => h.eventId));
      expect(events.every((e) => (sessions as readonly string[]).includes(e.sessionId))).toBe(true);
      const zebras = zebrasIn([...sessions]);
      expect(hits.slice(0, zebras.length).map((h) => h.eventId).sort()).toEqual(zebras);
      expect(hits).toHaveLength(12);
    }
  });

  it("finds every event of the project's sessions holding an identifier that thousands of other events hold", async () => {
    const terms = [{ text: 'src/orders/client.ts:385' }];
    const holders = (raw.prepare("SELECT id FROM events WHERE session_id = 'mine' AND content LIKE '%src/orders/client.ts:385%'").pluck().all() as string[]).sort();
    expect(holders).toHaveLength(12);
    expect(raw.prepare("SELECT count(*) FROM events WHERE content LIKE '%src/orders/client.ts:385%'").pluck().get()).toBeGreaterThan(3_000);
    const hits = await mem.store.searchText({ terms, filter: { visibleToProject: 'p' }, limit: 20 });
    expect(hits.map((h) => h.eventId).sort()).toEqual(holders);
    const exact = await mem.store.searchText({ terms, filter: { visibleToProject: 'p' }, limit: 20, boundAbove: Number.POSITIVE_INFINITY });
    expect(exact.map((h) => h.eventId).sort()).toEqual(holders);
  });
});

/**
 * A dormant project: its session `old` (40 events, 10 holding `zebra`, 8 an identifier that thousands of later events
 * hold) written first, then 24,000 events of `other`, every one holding `common`. Its span lies far below the store's
 * newest rows, so its walks go oldest first (fts5-bounded.ts `oldestFirstInSpan`): the same events must be found.
 */
describe("the span of a dormant project's sessions (SQLite)", () => {
  let dir: string;
  let mem: Engram;
  let raw: Database.Database;
  const ID = 'src/billing/ledger.ts:88';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-old-span-'));
    mem = await openEngram({ db: join(dir, 'engram.db') });
    await mem.append(
      'old',
      Array.from({ length: 40 }, (_, i) => ({ kind: 'note' as const, content: `common old ${i} ${i % 4 === 0 ? 'zebra' : 'plain'}${i % 5 === 0 ? ` failed at ${ID}` : ''}` })),
      { project: 'd' },
    );
    for (let batch = 0; batch < 48; batch++) {
      await mem.append('big', Array.from({ length: 500 }, (_, i) => ({ kind: 'note' as const, content: `common filler ${batch} ${i % 41}${i % 6 === 0 ? ` at ${ID}` : ''}${i % 97 === 0 ? ' zebra' : ''}` })), { project: 'other' });
    }
    await mem.maintainTextIndex();
    raw = new Database(join(dir, 'engram.db'), { readonly: true });
  });
  afterAll(async () => {
    raw.close();
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const ofOld = (like: string) => (raw.prepare("SELECT id FROM events WHERE session_id = 'old' AND content LIKE ?").pluck().all(like) as string[]).sort();

  it('spans the first rows of the store, with the store\'s top, and is walked oldest first', () => {
    const span = new SqliteVisibleSpan(raw).ofProject('d')!;
    expect(span).toMatchObject({ lo: 1, hi: 40, top: 24_040 });
    expect(isOldSpan(span)).toBe(true);
  });

  it("finds the project's rare-word events first and nothing of other projects, though 24,000 newer events hold `common`", async () => {
    const zebras = ofOld('%zebra%');
    expect(zebras).toHaveLength(10);
    for (const filter of [{ visibleToProject: 'd' }, { sessionIds: ['old'] }]) {
      const hits = await mem.store.searchText({ terms: [{ text: 'common' }, { text: 'zebra' }], filter: filter as never, limit: 15 });
      expect(hits.slice(0, 10).map((h) => h.eventId).sort()).toEqual(zebras);
      const events = await mem.store.getEvents(hits.map((h) => h.eventId));
      expect(events.every((e) => e.sessionId === 'old')).toBe(true);
      expect(hits).toHaveLength(15);
    }
  });

  it('finds exactly its holders of an identifier that thousands of newer events hold, as the exact path does', async () => {
    const holders = ofOld(`%${ID}%`);
    expect(holders).toHaveLength(8);
    expect(raw.prepare('SELECT count(*) FROM events WHERE content LIKE ?').pluck().get(`%${ID}%`)).toBeGreaterThan(3_000);
    const terms = [{ text: ID }];
    const hits = await mem.store.searchText({ terms, filter: { visibleToProject: 'd' }, limit: 20 });
    expect(hits.map((h) => h.eventId).sort()).toEqual(holders);
    const exact = await mem.store.searchText({ terms, filter: { visibleToProject: 'd' }, limit: 20, boundAbove: Number.POSITIVE_INFINITY });
    expect(exact.map((h) => h.eventId).sort()).toEqual(holders);
  });
});

describe('no span in a small store', () => {
  it(`gives none under ${SPAN_MIN_EVENTS.toLocaleString('en')} events, however small the sessions' share`, () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE events (rowid INTEGER PRIMARY KEY, session_id TEXT NOT NULL, turn INTEGER NOT NULL, UNIQUE (session_id, turn));
      CREATE TABLE sessions (id TEXT PRIMARY KEY, project TEXT, event_count INTEGER NOT NULL);
      CREATE TABLE session_shares (session_id TEXT NOT NULL, project TEXT NOT NULL);`);
    const insert = db.prepare('INSERT INTO events (session_id, turn) VALUES (?, ?)');
    const fill = (events: number) =>
      db.transaction(() => {
        for (let t = 1; t <= events; t++) insert.run('big', t);
      })();
    db.prepare("INSERT INTO sessions VALUES ('one', 'p', 1), ('big', 'other', 0)").run();
    insert.run('one', 1);
    fill(SPAN_MIN_EVENTS - 10);
    db.prepare("UPDATE sessions SET event_count = ? WHERE id = 'big'").run(SPAN_MIN_EVENTS - 10);
    const spans = new SqliteVisibleSpan(db);
    expect(spans.ofSessions(['one'])).toBeNull();
    expect(spans.ofProject('p')).toBeNull();
    // At the size, the span is looked up.
    db.transaction(() => {
      for (let t = SPAN_MIN_EVENTS - 9; t <= SPAN_MIN_EVENTS; t++) insert.run('big', t);
    })();
    expect(spans.ofSessions(['one'])).toMatchObject({ lo: 1, hi: 1 });
    expect(spans.ofProject('p')).toMatchObject({ lo: 1, hi: 1 });
    db.close();
  });
});
