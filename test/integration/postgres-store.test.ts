import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { openEngram } from '../../src/engine.js';
import { isEngramError } from '../../src/errors.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { openStore } from '../../src/store/open-store.js';
import { LATEST_POSTGRES_SCHEMA_VERSION, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { dropSchema, testPgUrl, uniqueSchema, withPassword, withPgClient } from '../fixtures/postgres.js';

let schema: string;
beforeEach(() => {
  schema = uniqueSchema('engram_st');
});
afterEach(async () => {
  await dropSchema(schema);
});

/** Everything in a schema that an open could change: its relations, migration rows and stored rows. */
async function fingerprint(c: pg.Client, name: string): Promise<string> {
  const rel = await c.query(
    `SELECT string_agg(k.relname || ':' || k.relkind::text, ',' ORDER BY k.relname) AS r
     FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace WHERE n.nspname = $1`,
    [name],
  );
  const tables = await c.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [name]);
  const parts = [String(rel.rows[0].r)];
  for (const { t } of tables.rows) {
    const rows = await c.query(`SELECT md5(COALESCE(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM "${name}"."${t}" x`);
    parts.push(`${t}=${String(rows.rows[0].h)}`);
  }
  return parts.join('\n');
}

describe('opening a PostgreSQL store', () => {
  it('refuses a schema written by a newer Engram and changes nothing', async () => {
    const mem = await openEngram({ pg: `${testPgUrl()}?schema=${schema}` });
    await mem.append('s', { kind: 'user', content: 'keep me' });
    await mem.close();
    await withPgClient((c) => c.query(`INSERT INTO "${schema}".engram_migrations (version, description) VALUES (99, 'from the future')`));
    const before = await withPgClient((c) => fingerprint(c, schema));

    const err = await PostgresBackend.open(testPgUrl(), { schema }).catch((e: unknown) => e);
    expect(isEngramError(err, 'SCHEMA_TOO_NEW')).toBe(true);
    expect((err as { data: { storeVersion: number } }).data.storeVersion).toBe(99);
    expect(await withPgClient((c) => fingerprint(c, schema))).toBe(before);
  });

  it('refuses a schema holding another application tables and leaves it unchanged', async () => {
    await withPgClient(async (c) => {
      await c.query(`CREATE SCHEMA "${schema}"`);
      await c.query(`CREATE TABLE "${schema}".customers (id serial PRIMARY KEY, name text); INSERT INTO "${schema}".customers (name) VALUES ('ada')`);
    });
    const before = await withPgClient((c) => fingerprint(c, schema));
    const err = await PostgresBackend.open(testPgUrl(), { schema }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_AN_ENGRAM_STORE')).toBe(true);
    expect(await withPgClient((c) => fingerprint(c, schema))).toBe(before);
  });

  it('migrates a new schema once when several servers open it at the same time', async () => {
    const backends = await Promise.all(Array.from({ length: 4 }, () => PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2 })));
    const versions = await withPgClient((c) => c.query(`SELECT version FROM "${schema}".engram_migrations ORDER BY version`));
    expect(versions.rows.map((r: { version: number }) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    for (const b of backends) expect((await b.stats()).schemaVersion).toBe(LATEST_POSTGRES_SCHEMA_VERSION);
    await Promise.all(backends.map((b) => b.close()));
  });

  it('takes the schema from ?schema= in the URL and refuses a different one in the options', async () => {
    const backend = await openStore({ pg: `${testPgUrl()}?schema=${schema}`, db: '/nonexistent/ignored.db' });
    expect(backend.name).toBe('postgres');
    expect((backend as PostgresBackend).schema).toBe(schema);
    await backend.close();
    const tables = await withPgClient((c) => c.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1`, [schema]));
    expect(tables.rows[0].n).toBeGreaterThan(0);

    const err = await PostgresBackend.open(`${testPgUrl()}?schema=${schema}`, { schema: 'other' }).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as { data: { field: string } }).data.field).toBe('schema');
  });

  it('fails a wrong password with a clear STORAGE_ERROR that does not leak the password', async () => {
    const password = 'Wrong-Secret-4711';
    const err = await PostgresBackend.open(withPassword(testPgUrl(), password), { schema }).catch((e: unknown) => e);
    expect(isEngramError(err, 'STORAGE_ERROR')).toBe(true);
    const e = err as { message: string; data: Record<string, unknown>; toJSON(): unknown };
    expect(e.message).toContain('authentication failed');
    expect(e.message).toContain(new URL(testPgUrl()).host);
    expect(e.data).toMatchObject({ retryable: false, sqlstate: '28P01' });
    expect(`${e.message} ${JSON.stringify(e.toJSON())}`).not.toContain(password);
  });

  it('fails a database that does not exist with NOT_FOUND naming it', async () => {
    const u = new URL(testPgUrl());
    u.pathname = '/engram_no_such_database';
    const err = await PostgresBackend.open(u.toString(), { schema }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_FOUND')).toBe(true);
    expect((err as Error).message).toContain('engram_no_such_database');
    if (u.password) expect(JSON.stringify((err as { toJSON(): unknown }).toJSON())).not.toContain(`:${u.password}@`);
  });

  it('fails an unreachable server with a retryable STORAGE_ERROR', async () => {
    const u = new URL(testPgUrl());
    u.host = '127.0.0.1:1';
    const err = await PostgresBackend.open(u.toString(), { schema, connectTimeoutMs: 3000 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'STORAGE_ERROR')).toBe(true);
    expect((err as { data: { retryable: boolean } }).data.retryable).toBe(true);
  });

  it('refuses a URL that is not a PostgreSQL URL', async () => {
    const err = await openStore({ pg: 'mysql://root@localhost/db' }).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as { data: { field: string } }).data.field).toBe('pg');
  });
});

describe('a PostgreSQL store', () => {
  it('upgrades a version-1 schema in place: events kept, supersession lookup, recall log and session owners added', async () => {
    const old = 'evt_01jaaaaaaaaaaaaaaaaaaaaaaa';
    const next = 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb';
    await withPgClient(async (c) => {
      const s = `"${schema}"`;
      await c.query(`CREATE SCHEMA ${s}`);
      await c.query(`CREATE TABLE ${s}.engram_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await c.query(POSTGRES_MIGRATIONS.find((m) => m.version === 1)!.sql(s));
      await c.query(`INSERT INTO ${s}.engram_migrations (version, description) VALUES (1, 'v1')`);
      await c.query(`INSERT INTO ${s}.sessions (id, created_ms, last_turn, event_count) VALUES ('s', 0, 2, 2)`);
      await c.query(`INSERT INTO ${s}.events (id, session_id, turn, kind, ts_ms, content) VALUES ($1, 's', 1, 'decision', 1000, 'use mysql')`, [old]);
      await c.query(`INSERT INTO ${s}.events (id, session_id, turn, kind, ts_ms, content, supersedes) VALUES ($1, 's', 2, 'decision', 2000, 'use postgres', $2)`, [
        next,
        old,
      ]);
    });
    const backend = await PostgresBackend.open(testPgUrl(), { schema });
    try {
      expect((await backend.stats()).schemaVersion).toBe(LATEST_POSTGRES_SCHEMA_VERSION);
      expect((await backend.getEvent(old as EventId))?.content).toBe('use mysql');
      expect(await backend.findSuperseding([old as EventId, next as EventId])).toEqual(new Map([[old, next]]));
      const id = await backend.logRecall({ tsMs: 5000, query: 'db', options: {}, results: [], durationMs: 1 });
      expect((await backend.listRecallLog()).map((r) => r.id)).toEqual([id]);
      expect(await backend.getSession('s' as SessionId)).toMatchObject({ id: 's', project: 'default', sharedWith: [], eventCount: 2 });
    } finally {
      await backend.close();
    }
    const err = await withPgClient((c) => c.query(`UPDATE "${schema}".recall_log SET task_id = 'x'`)).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('EG001');
  });

  it('refuses, in the database itself, to update, delete or truncate events', async () => {
    const mem = await openEngram({ pg: testPgUrl(), postgres: { schema } });
    await mem.append('s', { kind: 'user', content: 'immutable' });
    await mem.append('s', { kind: 'tool_result', content: 'big output line\n'.repeat(1000) });
    await mem.close();
    for (const sql of [
      `UPDATE "${schema}".events SET content = 'changed'`,
      `DELETE FROM "${schema}".events`,
      `TRUNCATE "${schema}".events CASCADE`,
      `DELETE FROM "${schema}".event_text`,
      `UPDATE "${schema}".artifacts SET media_type = 'x'`,
    ]) {
      const err = await withPgClient((c) => c.query(sql)).catch((e: unknown) => e);
      expect((err as { code?: string }).code, sql).toBe('EG001');
    }
    const rows = await withPgClient((c) => c.query(`SELECT turn, content FROM "${schema}".events ORDER BY turn`));
    expect(rows.rows[0]).toEqual({ turn: 1, content: 'immutable' });
    expect(rows.rows).toHaveLength(2);
  });

  it('finds a phrase deep inside a large, repetitive log (past the tsvector position caps)', async () => {
    const mem = await openEngram({ pg: testPgUrl(), postgres: { schema } });
    // Lines in which 0 and 1 recur ten times each: in one tsvector, or in chunks cut by size alone, the
    // phrase 127 0 0 1 5432 at line 15,000 would be lost to the 256-positions-per-lexeme cap (and, unchunked,
    // to the 16,383-position cap).
    const lines = Array.from({ length: 20_000 }, (_, i) => `item ${i} flags 0.0.0.0.0.1.1.1.1.1 mask 1.1.1.1.1.0.0.0.0.0`);
    lines[15_000] = '2024-01-01 00:00:00 ERROR connect ECONNREFUSED 127.0.0.1:5432 (pool exhausted)';
    await mem.append('s', { kind: 'tool_result', content: lines.join('\n'), toolName: 'Bash' });
    await mem.append('s', { kind: 'assistant', content: 'The service on 127.0.0.2 answers on 5432 and 1 other port.' });
    const r = await mem.recall('127.0.0.1:5432');
    expect(r.hits).toHaveLength(1);
    expect(r.hits[0]!.artifactId).toBeDefined();
    expect(r.hits[0]!.excerpt).toContain('ECONNREFUSED 127.0.0.1:5432');
    await mem.close();
  });

  it('indexes a text whose single tsvector would exceed 1 MB, finding its last words', async () => {
    const mem = await openEngram({ pg: testPgUrl(), postgres: { schema } });
    const words = Array.from({ length: 150_000 }, (_, i) => `tok${i.toString(36)}x${(i * 7919).toString(36)}`);
    words.push('needle-in-the-haystack-zq42');
    await mem.append('s', { kind: 'tool_result', content: words.join(' ') });
    const r = await mem.recall('needle-in-the-haystack-zq42');
    expect(r.hits).toHaveLength(1);
    expect(r.hits[0]!.isExactMatch).toBe(true);
    await mem.close();
  });

  it('round-trips content with NUL characters, which PostgreSQL text cannot hold', async () => {
    const mem = await openEngram({ pg: testPgUrl(), postgres: { schema } });
    const content = 'find . -print0 gave a\u0000b\u0000"quoted"\u0000';
    const [out] = await mem.append('s', { kind: 'tool_result', content, meta: { raw: 'x\u0000y' } });
    const stored = await mem.getEvent(out!.record.id);
    expect(stored.content).toBe(content);
    expect(stored.meta).toEqual({ raw: 'x\u0000y' });
    expect((await mem.recall('print0')).hits).toHaveLength(1);
    const err = await mem.append('s', { kind: 'user', content: 'x', toolName: 'to\u0000ol' }).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((await mem.stats()).events).toBe(1);
    await mem.close();
  });

  it('names its location without the password in stats', async () => {
    const backend = await PostgresBackend.open(testPgUrl(), { schema });
    const stats = await backend.stats();
    expect(stats.backend).toContain(schema);
    const password = new URL(testPgUrl()).password;
    if (password) expect(stats.backend).not.toContain(`:${password}@`);
    expect(backend.capabilities).toEqual({ fullText: 'tsvector', vectorSearch: 'exact-scan', supportsConcurrentWriters: true, isPowerLossDurable: true });
    await backend.close();
  });
});
