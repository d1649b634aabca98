import Database from 'better-sqlite3';
import { expect, it } from 'vitest';
import type { EventInput } from '../../src/model/event.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { withPgClient } from '../fixtures/postgres.js';
import { runStorageContract, useEngram } from './harnesses.js';

/** Runs a statement behind Engram's back, as another client of the same database would. */
async function rawStatement(backend: StorageBackend, sql: (table: (name: string) => string) => string): Promise<void> {
  if (backend instanceof SqliteBackend) {
    const db = new Database(backend.path);
    try {
      db.prepare(sql((t) => t)).run();
    } finally {
      db.close();
    }
    return;
  }
  if (backend instanceof PostgresBackend) {
    await withPgClient(async (c) => {
      await c.query(sql((t) => `"${backend.schema}".${t}`));
    });
    return;
  }
  throw new Error(`no raw access to a ${backend.name} store in this test`);
}

function work(startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 60_000, content: `Step ${i}: the ledger import fails again, find out why and fix it please.` });
    out.push({ kind: 'assistant', ts: startMs + i * 60_000 + 30_000, content: `The ledger import failed on ERR_LEDGER_${i}; I fixed src/ledger/import${i}.ts and the tests pass.` });
  }
  return out;
}

// Summaries go to the cold tier, never away: the database itself refuses a delete outside a purge (SQLite: trigger
// summaries_no_delete of migration 12; PostgreSQL: the same trigger, migration 15).
runStorageContract('summaries are never deleted', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('refuses a delete of a summary (and on PostgreSQL a TRUNCATE) by another client; a purge still tombstones it', async () => {
    await ctx.mem.append('s1', [...work(Date.UTC(2026, 2, 2, 9)), { kind: 'decision', content: 'Decision: the ledger key is kiwi-3141-LEDGER from now on.' }], { project: 'shop' });
    const [made] = (await ctx.mem.consolidator().consolidateSession('s1')).summaries;
    expect(made).toBeDefined();
    await expect(rawStatement(ctx.harness.backend, (t) => `DELETE FROM ${t('summaries')} WHERE id = '${made!.id}'`)).rejects.toThrow(/summaries are never deleted/);
    await expect(rawStatement(ctx.harness.backend, (t) => `DELETE FROM ${t('summaries')}`)).rejects.toThrow(/never deleted/);
    if (ctx.harness.backend instanceof PostgresBackend) {
      await expect(rawStatement(ctx.harness.backend, (t) => `TRUNCATE ${t('summaries')} CASCADE`)).rejects.toThrow(/never deleted/);
    }
    expect(await ctx.mem.summaries.get(made!.id)).toEqual(made);
    // The purge's own path is not refused: it tombstones the summary (cold), and the row stays.
    await ctx.mem.purge({ match: 'kiwi-3141-LEDGER' }, { actor: 'os:test' });
    const after = await ctx.mem.summaries.get(made!.id);
    expect(after).toMatchObject({ id: made!.id, coldReason: expect.stringMatching(/^purged/) });
    expect(after.text).not.toContain('kiwi-3141-LEDGER');
    await expect(rawStatement(ctx.harness.backend, (t) => `DELETE FROM ${t('summaries')} WHERE id = '${made!.id}'`)).rejects.toThrow(/never deleted/);
  });
});
