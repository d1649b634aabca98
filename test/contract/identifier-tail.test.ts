import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { queryGrams } from '../../src/store/identifier-grams.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { gramPhrase } from '../../src/store/sqlite/sqlite-identifier-index.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { withPgClient } from '../fixtures/postgres.js';
import type { BackendHarness } from './storage-contract.js';
import { runStorageContract } from './harnesses.js';

/**
 * The identifier index's watermark and tail on every backend (docs/recall.md, "Full-text at scale"): appends do not
 * write identifier keys; an event stored after the index caught up is found by its identifier at once, through the
 * full-text phrase of the tail, on the path that uses the index (`boundAbove: 0`) as on the plain one; the catch-up
 * (`mem.maintainTextIndex()`) then writes its keys, and a purge deletes them.
 */
const FRESH = 'src/tail/fresh_client.ts:77';

/** Filler whose tokens the identifier shares (`src`, `ts`, `client`), as an agent's tool output does. */
function filler(i: number): string {
  return `step ${i} ok in src/api/client${i % 7}.ts:${i % 90} and src/tail/other.ts:${i % 11}`;
}

/** Whether the identifier index holds keys of this event (read from the store's own tables). */
async function hasKeys(backend: StorageBackend, eventId: string): Promise<boolean> {
  if (backend instanceof SqliteBackend) {
    const db = new Database(backend.path, { readonly: true });
    try {
      const rowid = (db.prepare('SELECT rowid FROM events WHERE id = ?').get(eventId) as { rowid: number }).rowid;
      const rows = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ?').all(gramPhrase(queryGrams(FRESH)!)) as Array<{ rowid: number }>;
      return rows.some((r) => r.rowid === rowid);
    } finally {
      db.close();
    }
  }
  if (backend instanceof PostgresBackend) {
    const s = `"${backend.schema}"`;
    return withPgClient(async (c) => {
      const r = await c.query(`SELECT 1 FROM ${s}.event_idgrams g JOIN ${s}.events e ON e.pk = g.event_pk WHERE e.id = $1 LIMIT 1`, [eventId]);
      return r.rows.length > 0;
    });
  }
  throw new Error(`no key reader for ${backend.name}`);
}

runStorageContract('identifier index watermark and tail', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let freshId: string;

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    for (let start = 0; start < 1_200; start += 400) {
      await mem.append('filler', Array.from({ length: 400 }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: filler(start + j) })));
    }
  }, 60_000);
  afterAll(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  const search = async (boundAbove: number): Promise<string[]> =>
    (await harness.backend.searchText({ terms: parseQuery(FRESH).terms, limit: 40, boundAbove })).map((h) => h.eventId);

  describe('an identifier appended after the index caught up', () => {
    it('appends leave their events to the catch-up, which indexes them all', async () => {
      expect(await harness.backend.identifierIndexStatus()).toMatchObject({ state: 'pending', backlog: 1_200 });
      expect(await mem.maintainTextIndex()).toEqual({ state: 'complete', events: 1_200, total: 1_200 });
      expect(await harness.backend.identifierIndexStatus()).toMatchObject({ state: 'complete', backlog: 0 });
    });

    it('is found at once, before the catch-up, on the path that uses the index and on the plain one', async () => {
      const [out] = await mem.append('work', [{ kind: 'tool_result', toolName: 'bash', content: `TypeError at (${FRESH}:9) while loading` }]);
      freshId = out!.record.id;
      expect(await harness.backend.identifierIndexStatus()).toMatchObject({ state: 'pending', backlog: 1 });
      expect(await hasKeys(harness.backend, freshId)).toBe(false);
      expect(await search(0)).toEqual([freshId]);
      expect(await search(Number.POSITIVE_INFINITY)).toEqual([freshId]);
      const r = await mem.recall(FRESH, { retriever: 'fts', logRecall: false, k: 5 });
      expect(r.hits.map((h) => h.eventId)).toEqual([freshId]);
    });

    it('is found after the catch-up, through its keys', async () => {
      expect(await mem.maintainTextIndex()).toMatchObject({ state: 'complete', events: 1 });
      expect(await hasKeys(harness.backend, freshId)).toBe(true);
      expect(await search(0)).toEqual([freshId]);
      expect(await search(Number.POSITIVE_INFINITY)).toEqual([freshId]);
    });

    it('a purge deletes its keys, and neither path finds it', async () => {
      await mem.purge({ eventIds: [freshId as never] }, { actor: 'os:test' });
      expect(await hasKeys(harness.backend, freshId)).toBe(false);
      expect(await search(0)).toEqual([]);
      expect(await search(Number.POSITIVE_INFINITY)).toEqual([]);
    });

    it('a purged event still waiting for the catch-up is passed over by it, and not found meanwhile', async () => {
      const [out] = await mem.append('work', [{ kind: 'tool_result', toolName: 'bash', content: `again at ${FRESH}` }]);
      const id = out!.record.id;
      expect(await search(0)).toEqual([id]);
      await mem.purge({ eventIds: [id as never] }, { actor: 'os:test' });
      expect(await search(0)).toEqual([]);
      expect(await mem.maintainTextIndex()).toMatchObject({ state: 'complete', events: 1 });
      expect(await hasKeys(harness.backend, id)).toBe(false);
      expect(await search(0)).toEqual([]);
    });
  });
});
