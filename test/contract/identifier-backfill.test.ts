import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { queryGrams } from '../../src/store/identifier-grams.js';
import type { EventDraft, StorageBackend, TextIndexEntry } from '../../src/store/backend.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { gramPhrase } from '../../src/store/sqlite/sqlite-identifier-index.js';

/**
 * The identifier index of a store made before it existed, and of one made before appends left it to the catch-up
 * (docs/recall.md, "Full-text at scale"): opening the store writes nothing; every event past the watermark (all of
 * them when the index was pending) is covered by the plain full-text phrase; `mem.maintainTextIndex()` (run by
 * `engram reindex`) indexes them in pages, resumes where an interrupted run stopped, and then searches use the index
 * and find what they found before. A purge deletes a purged event's rows.
 */
const IDENTIFIER = 'src/db/pool.ts:42';

/** The rows of the identifier index holding IDENTIFIER (its trigram tokens as a phrase, sqlite-identifier-index.ts). */
function holders(db: Database.Database): number[] {
  const phrase = gramPhrase(queryGrams(IDENTIFIER)!);
  return (db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ?').all(phrase) as Array<{ rowid: number }>).map((r) => r.rowid);
}

function text(i: number): string {
  if (i % 250 === 7) return `Error at query (${IDENTIFIER}:9) while config loaded`;
  if (i % 250 === 8) return `near miss: src/db/pool.ts:43 and lib/db/pool.ts:42`;
  return `config service ${i % 2 === 0 ? 'request' : 'handler'} step ${i} in src/api/x${i % 13}.ts:${i % 400}`;
}

describe('identifier index backfill (SQLite)', () => {
  let dir: string;
  let mem: Engram | undefined;
  afterEach(async () => {
    await mem?.close();
    mem = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A store whose events were stored before the index existed: its rows deleted, the index marked pending and no
   * watermark (as migration 17 left it).
   */
  async function upgradedStore(events: number): Promise<{ path: string; expected: string[] }> {
    dir = mkdtempSync(join(tmpdir(), 'engram-idx-'));
    const path = join(dir, 'engram.db');
    const m = await openEngram({ backend: SqliteBackend.open(path) });
    const expected: string[] = [];
    for (let s = 0; s < 3; s++) {
      for (let from = 0; from < events / 3; from += 500) {
        const n = Math.min(500, events / 3 - from);
        const out = await m.append(`s${s}`, Array.from({ length: n }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: text(s * 1000 + from + j) })));
        out.forEach((o, j) => {
          if ((s * 1000 + from + j) % 250 === 7) expected.push(o.record.id);
        });
      }
    }
    await m.maintainTextIndex();
    await m.close();
    const db = new Database(path);
    expect(holders(db).length).toBe(expected.length);
    db.exec(
      "INSERT INTO event_grams (event_grams) VALUES ('delete-all'); UPDATE text_index_state SET value = 'pending' WHERE name = 'identifier_fts'; DELETE FROM text_index_state WHERE name = 'identifier_fts_watermark'",
    );
    expect(holders(db)).toEqual([]);
    db.close();
    return { path, expected: expected.sort() };
  }

  /** As an older version left a complete index: every event's rows written at append, no watermark. */
  async function completeWithoutWatermark(path: string): Promise<void> {
    const m = await openEngram({ backend: SqliteBackend.open(path) });
    await m.maintainTextIndex();
    await m.close();
    const db = new Database(path);
    db.exec("DELETE FROM text_index_state WHERE name = 'identifier_fts_watermark'; UPDATE text_index_state SET value = 'complete' WHERE name = 'identifier_fts'");
    db.close();
  }

  const search = async (store: StorageBackend, boundAbove: number): Promise<string[]> =>
    (await store.searchText({ terms: parseQuery(IDENTIFIER).terms, limit: 40, boundAbove })).map((h) => h.eventId).sort();

  it('pending: every event is covered by the full-text phrase; after the catch-up searches use the index and find the same events', async () => {
    const { path, expected } = await upgradedStore(1500);
    mem = await openEngram({ backend: SqliteBackend.open(path) });
    expect(await mem.store.identifierIndexStatus()).toMatchObject({ state: 'pending', backlog: 1500, cursor: '0' });
    expect(await search(mem.store, 0)).toEqual(expected);
    // An append while pending joins the backlog.
    await mem.append('s9', [{ kind: 'tool_result', toolName: 'bash', content: `again at (${IDENTIFIER}:1)` }]);
    expect(await mem.store.identifierIndexStatus()).toMatchObject({ state: 'pending', backlog: 1501 });
    const all = [...expected, ...(await mem.store.searchText({ terms: parseQuery(`again ${IDENTIFIER}`).terms, limit: 1, boundAbove: Infinity })).map((h) => h.eventId)].sort();
    const done = await mem.maintainTextIndex();
    expect(done).toMatchObject({ state: 'complete', events: 1501 });
    expect(await mem.store.identifierIndexStatus()).toMatchObject({ state: 'complete', backlog: 0 });
    expect(await search(mem.store, 0)).toEqual(all);
    expect(await search(mem.store, Number.POSITIVE_INFINITY)).toEqual(all);
    // Complete: a second run does nothing.
    expect(await mem.maintainTextIndex()).toMatchObject({ state: 'complete', events: 0 });
  });

  it('an interrupted catch-up resumes where its last page ended', async () => {
    const { path, expected } = await upgradedStore(3000);
    const backend = SqliteBackend.open(path);
    mem = await openEngram({ backend });
    // The second page's write fails, as a crash would stop it.
    const fill = backend.fillIdentifierIndex.bind(backend);
    let calls = 0;
    backend.fillIdentifierIndex = async (entries: TextIndexEntry[], progress: { through: EventId[] }) => {
      if (++calls === 2) throw new Error('crash');
      return fill(entries, progress);
    };
    await expect(mem.maintainTextIndex()).rejects.toThrow('crash');
    const status = await backend.identifierIndexStatus();
    // The first page (rowids 1-1,000) is indexed, the rest waits.
    expect(status).toEqual({ state: 'pending', cursor: '1000', backlog: 2000 });
    expect(await search(backend, 0)).toEqual(expected);
    backend.fillIdentifierIndex = fill;
    const done = await mem.maintainTextIndex();
    // Resumed after the first page.
    expect(done).toMatchObject({ state: 'complete', events: 2000 });
    expect(await search(backend, 0)).toEqual(expected);
  });

  it("a purge deletes the purged events' rows", async () => {
    const { path, expected } = await upgradedStore(1500);
    mem = await openEngram({ backend: SqliteBackend.open(path) });
    await mem.maintainTextIndex();
    const db = new Database(path, { readonly: true });
    const rowid = (db.prepare('SELECT rowid FROM events WHERE id = ?').get(expected[0]!) as { rowid: number }).rowid;
    expect(holders(db)).toContain(rowid);
    await mem.purge({ eventIds: [expected[0]!] }, { actor: 'os:test' });
    expect(holders(db)).not.toContain(rowid);
    expect(holders(db)).toHaveLength(expected.length - 1);
    db.close();
    expect(await search(mem.store, 0)).toEqual(expected.slice(1));
  });

  it('a store whose index was complete before the watermark existed: its events count as indexed, later appends as the tail', async () => {
    const { path, expected } = await upgradedStore(600);
    await completeWithoutWatermark(path);
    mem = await openEngram({ backend: SqliteBackend.open(path) });
    expect(await mem.store.identifierIndexStatus()).toEqual({ state: 'complete', cursor: '600', backlog: 0 });
    const [fresh] = await mem.append('s9', [{ kind: 'tool_result', toolName: 'bash', content: `again at (${IDENTIFIER}:1)` }]);
    expect(await mem.store.identifierIndexStatus()).toEqual({ state: 'pending', cursor: '600', backlog: 1 });
    expect(await search(mem.store, 0)).toEqual([...expected, fresh!.record.id].sort());
    expect(await mem.maintainTextIndex()).toMatchObject({ state: 'complete', events: 1 });
    expect(await search(mem.store, 0)).toEqual([...expected, fresh!.record.id].sort());
  });

  it('a first append that rolls back does not leave later appends counted as indexed', async () => {
    const { path, expected } = await upgradedStore(600);
    await completeWithoutWatermark(path);
    const backend = SqliteBackend.open(path);
    mem = await openEngram({ backend });
    // The first append fails inside its transaction, after the watermark was written (a value of the wrong type).
    const bad = { id: 'evt_bad', kind: 'note', tsMs: 'not a number', content: 'x', tags: [], searchText: 'x', searchMeta: 'note' } as unknown as EventDraft;
    await expect(backend.appendEvents('s9' as SessionId, [bad], [])).rejects.toThrow();
    const [fresh] = await mem.append('s9', [{ kind: 'tool_result', toolName: 'bash', content: `again at (${IDENTIFIER}:1)` }]);
    expect(await mem.store.identifierIndexStatus()).toMatchObject({ state: 'pending', backlog: 1 });
    expect(await mem.maintainTextIndex()).toMatchObject({ state: 'complete', events: 1 });
    expect(await search(mem.store, 0)).toEqual([...expected, fresh!.record.id].sort());
  });
});
