import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EngramKind, EngramScope } from '../../src/model/engram.js';
import { isEngramError } from '../../src/errors.js';
import type { StorageBackend } from '../../src/store/backend.js';
import type { BusStorage, EngramKeyQuery, EngramRow, GrantRecord } from '../../src/store/bus-storage.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

/**
 * The Engram Bus part of the storage seam (src/store/bus-storage.ts) on every backend: the limits the bus
 * relies on (rate, dedupe, deref budgets, single-use grants) and the visibility rules of key queries.
 */

const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

interface RowSpec {
  id?: string;
  project?: string | null;
  runId?: string;
  scope?: EngramScope;
  kind?: EngramKind;
  createdBy?: string;
  createdMs?: number;
  ttlMs?: number;
  dedupeKey?: string;
  keys?: string[];
}

let seq = 0;
function engramRow(spec: RowSpec = {}): EngramRow {
  seq += 1;
  const id = spec.id ?? `eg-${String(seq).padStart(5, '0')}`;
  const createdMs = spec.createdMs ?? T0;
  const createdBy = spec.createdBy ?? 'writer';
  const keys = spec.keys ?? ['k:default'];
  return {
    engram: {
      id,
      kind: spec.kind ?? 'fact',
      claim: `claim of ${id}`,
      pointers: [{ type: 'repo', ref: 'repo:src/a.ts#L1-L9@0123456789abcdef0123456789abcdef01234567' }],
      confidence: 0.9,
      ttl: 'PT1H',
      scope: spec.scope ?? 'project',
      hash_keys: keys.slice(0, 32),
      provenance: { created_at: new Date(createdMs).toISOString(), created_by: createdBy, source: 'agent' },
    },
    project: spec.project === undefined ? 'shop' : spec.project,
    runId: spec.runId ?? 'run-1',
    createdBy,
    createdMs,
    expiresMs: createdMs + (spec.ttlMs ?? HOUR_MS),
    dedupeKey: spec.dedupeKey ?? `dedupe-${id}`,
    indexKeys: keys,
  };
}

const LIMITS = { maxPerAgentPerMinute: 100 };

async function put(bus: BusStorage, spec: RowSpec = {}): Promise<EngramRow> {
  const out = await bus.putEngram(engramRow(spec), LIMITS);
  if (out.status !== 'stored') throw new Error(`expected stored, got ${out.status}`);
  return out.row;
}

/** A reader in project `shop`, run `run-1`, at T0 + 1 s, asking for `keys`. */
function keyQuery(keys: string[], over: Partial<EngramKeyQuery> = {}): EngramKeyQuery {
  return { keys, project: 'shop', runId: 'run-1', nowMs: T0 + 1000, perKeyLimit: 50, limit: 1000, ...over };
}

async function idsByKeys(bus: BusStorage, keys: string[], over: Partial<EngramKeyQuery> = {}): Promise<string[]> {
  return (await bus.queryEngramsByKeys(keyQuery(keys, over))).map((h) => h.row.engram.id).sort();
}

function grant(id: string, over: Partial<GrantRecord> = {}): GrantRecord {
  return { id, parentId: 'parent', childId: 'child', pointerRef: 'repo:src/a.ts#L1-L9@abc', capTokens: 400, issuedMs: T0, expiresMs: T0 + 60_000, ...over };
}

/**
 * Runs raw SQL on the store behind the backend's back, on a second connection (what a careless script or
 * another tool would do). `{t}` stands for the table prefix: the schema in PostgreSQL, nothing in SQLite.
 */
async function rawSql(backend: StorageBackend, sql: string): Promise<void> {
  if (backend instanceof SqliteBackend) {
    const db = new Database(backend.path);
    try {
      db.prepare(sql.replaceAll('{t}', '')).run();
    } finally {
      db.close();
    }
    return;
  }
  if (backend instanceof PostgresBackend) {
    await withPgClient((c) => c.query(sql.replaceAll('{t}', `"${backend.schema}".`)));
    return;
  }
  throw new Error(`no raw access to a ${backend.name} store in this test`);
}

runStorageContract('bus storage', ({ createHarness }) => {
  let harness: BackendHarness;
  let bus: BusStorage;

  beforeEach(async () => {
    harness = await createHarness();
    bus = harness.backend.bus;
  });
  afterEach(async () => {
    await harness?.cleanup();
  });

  describe('putEngram', () => {
    it('stores an engram with its keys and reads it back unchanged', async () => {
      const row = engramRow({ keys: ['k:a', 'k:b', 'k:a'] });
      const out = await bus.putEngram(row, LIMITS);
      expect(out.status).toBe('stored');
      const stored = await bus.getEngram(row.engram.id);
      expect(stored).toEqual({ ...row, indexKeys: ['k:a', 'k:b'] });
      expect(await bus.getEngram('eg-missing')).toBeNull();
    });

    it('answers a live engram with the same dedupe key in the same project as a duplicate and writes nothing', async () => {
      const first = await put(bus, { dedupeKey: 'same', keys: ['k:dup'] });
      const again = engramRow({ dedupeKey: 'same', createdMs: T0 + 10, createdBy: 'someone-else', keys: ['k:dup'] });
      const out = await bus.putEngram(again, LIMITS);
      expect(out).toEqual({ status: 'duplicate', row: first });
      expect(await bus.getEngram(again.engram.id)).toBeNull();
      expect(await idsByKeys(bus, ['k:dup'])).toEqual([first.engram.id]);
    });

    it('does not count an engram of another project (or of no project) as a duplicate', async () => {
      await put(bus, { dedupeKey: 'same', project: 'shop' });
      expect((await bus.putEngram(engramRow({ dedupeKey: 'same', project: 'bank' }), LIMITS)).status).toBe('stored');
      expect((await bus.putEngram(engramRow({ dedupeKey: 'same', project: null }), LIMITS)).status).toBe('stored');
      // ...but null equals null.
      expect((await bus.putEngram(engramRow({ dedupeKey: 'same', project: null }), LIMITS)).status).toBe('duplicate');
    });

    it('does not count an expired or a removed engram as a duplicate', async () => {
      await put(bus, { dedupeKey: 'short', ttlMs: 1000 });
      // Expired exactly at createdMs + ttl.
      expect((await bus.putEngram(engramRow({ dedupeKey: 'short', createdMs: T0 + 1000 }), LIMITS)).status).toBe('stored');

      const removed = await put(bus, { dedupeKey: 'gone' });
      expect(await bus.removeEngram(removed.engram.id, 'admin', T0 + 5)).toBe(true);
      expect((await bus.putEngram(engramRow({ dedupeKey: 'gone', createdMs: T0 + 10 }), LIMITS)).status).toBe('stored');
    });

    it("refuses a writer's engram past the limit of the minute before createdMs, without writing it", async () => {
      const limits = { maxPerAgentPerMinute: 3 };
      for (let i = 0; i < 3; i++) expect((await bus.putEngram(engramRow({ createdMs: T0 + i }), limits)).status).toBe('stored');
      const refused = engramRow({ createdMs: T0 + 30_000 });
      expect(await bus.putEngram(refused, limits)).toEqual({ status: 'rateLimited', recentCount: 3 });
      expect(await bus.getEngram(refused.engram.id)).toBeNull();
      // Another writer has its own budget.
      expect((await bus.putEngram(engramRow({ createdBy: 'other', createdMs: T0 + 30_000 }), limits)).status).toBe('stored');
      // A minute after the first, it has left the window (createdMs - 60 s, ...): two remain in it.
      expect((await bus.putEngram(engramRow({ createdMs: T0 + 60_000 }), limits)).status).toBe('stored');
      expect(await bus.putEngram(engramRow({ createdMs: T0 + 60_000 }), limits)).toEqual({ status: 'rateLimited', recentCount: 3 });
    });

    it('counts engrams stamped after createdMs too (puts arrive out of order)', async () => {
      const limits = { maxPerAgentPerMinute: 2 };
      await put(bus, { createdMs: T0 + 5000 });
      await put(bus, { createdMs: T0 + 9000 });
      expect(await bus.putEngram(engramRow({ createdMs: T0 }), limits)).toEqual({ status: 'rateLimited', recentCount: 2 });
    });

    it('answers a duplicate even when the writer is over its rate limit', async () => {
      const first = await put(bus, { dedupeKey: 'retry' });
      const out = await bus.putEngram(engramRow({ dedupeKey: 'retry', createdMs: T0 + 1 }), { maxPerAgentPerMinute: 1 });
      expect(out).toEqual({ status: 'duplicate', row: first });
    });

    it('refuses a second engram with an id already taken (CONFLICT naming id)', async () => {
      const first = await put(bus, { id: 'eg-taken', dedupeKey: 'one' });
      await bus.removeEngram(first.engram.id, 'admin', T0 + 1);
      const err = await bus.putEngram(engramRow({ id: 'eg-taken', dedupeKey: 'two' }), LIMITS).catch((e: unknown) => e);
      expect(isEngramError(err, 'CONFLICT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe('id');
    });
  });

  describe('queryEngramsByKeys', () => {
    it('returns engrams holding any of the keys, with how many of the keys each holds', async () => {
      const both = await put(bus, { keys: ['k:a', 'k:b', 'k:c'] });
      const one = await put(bus, { keys: ['k:b'] });
      await put(bus, { keys: ['k:z'] });
      const hits = await bus.queryEngramsByKeys(keyQuery(['k:a', 'k:b', 'k:a', 'k:none']));
      const matched = Object.fromEntries(hits.map((h) => [h.row.engram.id, h.matchedKeys]));
      expect(matched).toEqual({ [both.engram.id]: 2, [one.engram.id]: 1 });
      expect(await bus.queryEngramsByKeys(keyQuery([]))).toEqual([]);
    });

    it('returns the limit engrams with the highest key weight: a rare key outweighs common ones', async () => {
      for (let i = 0; i < 5; i++) await put(bus, { keys: ['k:common1', 'k:common2'], createdMs: T0 - 10_000 + i });
      const rare = await put(bus, { keys: ['k:rare'], createdMs: T0 - 20_000 });
      const hits = await bus.queryEngramsByKeys(keyQuery(['k:common1', 'k:common2', 'k:rare'], { perKeyLimit: 10, limit: 1 }));
      expect(hits.map((h) => h.row.engram.id)).toEqual([rare.engram.id]);
      // ln(1 + 10/1) for the one key it holds.
      expect(hits[0]!.keyWeight).toBeCloseTo(Math.log(11), 6);
      expect(hits[0]!.matchedKeys).toBe(1);
      const all = await bus.queryEngramsByKeys(keyQuery(['k:common1', 'k:common2', 'k:rare'], { perKeyLimit: 10, limit: 10 }));
      const common = all.find((h) => h.row.engram.id !== rare.engram.id)!;
      expect(common.matchedKeys).toBe(2);
      expect(common.keyWeight).toBeCloseTo(2 * Math.log(1 + 10 / 5), 6);
    });

    it('reads at most perKeyLimit engrams per key, newest first', async () => {
      const rows: EngramRow[] = [];
      for (let i = 0; i < 5; i++) rows.push(await put(bus, { keys: ['k:common'], createdMs: T0 - 5000 + i * 1000 }));
      const oldest = rows[0]!;
      expect(await idsByKeys(bus, ['k:common'], { perKeyLimit: 2 })).toEqual([rows[3]!.engram.id, rows[4]!.engram.id]);
      // An engram past one key's quota is still found through another of its keys.
      const rare = await put(bus, { keys: ['k:common', 'k:rare'], createdMs: T0 - 10_000 });
      const ids = await idsByKeys(bus, ['k:common', 'k:rare'], { perKeyLimit: 2 });
      expect(ids).toEqual([rare.engram.id, rows[3]!.engram.id, rows[4]!.engram.id].sort());
      expect(ids).not.toContain(oldest.engram.id);
      expect(await idsByKeys(bus, ['k:common'], { perKeyLimit: 0 })).toEqual([]);
    });

    it('never shows project or run engrams of another project; run engrams only within their run', async () => {
      const project = await put(bus, { scope: 'project', keys: ['k:v'] });
      const run1 = await put(bus, { scope: 'run', runId: 'run-1', keys: ['k:v'] });
      const run2 = await put(bus, { scope: 'run', runId: 'run-2', keys: ['k:v'] });
      const bankProject = await put(bus, { scope: 'project', project: 'bank', runId: 'run-1', keys: ['k:v'] });
      await put(bus, { scope: 'run', project: 'bank', runId: 'run-1', keys: ['k:v'] });

      expect(await idsByKeys(bus, ['k:v'])).toEqual([project.engram.id, run1.engram.id].sort());
      expect(await idsByKeys(bus, ['k:v'], { runId: 'run-2' })).toEqual([project.engram.id, run2.engram.id].sort());
      expect(await idsByKeys(bus, ['k:v'], { project: 'bank', runId: 'run-9' })).toEqual([bankProject.engram.id]);
      expect(await idsByKeys(bus, ['k:v'], { project: null })).toEqual([]);
    });

    it('shows org and global engrams to every reader, and a null project to a null-project reader', async () => {
      const org = await put(bus, { scope: 'org', project: 'bank', keys: ['k:s'] });
      const global = await put(bus, { scope: 'global', project: null, keys: ['k:s'] });
      const noProject = await put(bus, { scope: 'project', project: null, keys: ['k:s'] });
      const shared = [org.engram.id, global.engram.id].sort();
      expect(await idsByKeys(bus, ['k:s'])).toEqual(shared);
      expect(await idsByKeys(bus, ['k:s'], { project: 'elsewhere', runId: 'x' })).toEqual(shared);
      expect(await idsByKeys(bus, ['k:s'], { project: null })).toEqual([...shared, noProject.engram.id].sort());
    });

    it('restricts results to the scopes asked for', async () => {
      const ids: Record<string, string> = {};
      for (const scope of ['run', 'project', 'org', 'global'] as const) ids[scope] = (await put(bus, { scope, keys: ['k:sc'] })).engram.id;
      expect(await idsByKeys(bus, ['k:sc'], { scopes: ['project'] })).toEqual([ids.project]);
      expect(await idsByKeys(bus, ['k:sc'], { scopes: ['run', 'global'] })).toEqual([ids.run!, ids.global!].sort());
      expect(await idsByKeys(bus, ['k:sc'], { scopes: ['org'] })).toEqual([ids.org]);
      expect(await idsByKeys(bus, ['k:sc'], { scopes: [] })).toEqual([]);
    });

    it('does not let engrams of another project fill a key quota', async () => {
      const mine = await put(bus, { keys: ['k:busy'], createdMs: T0 - 60_000 });
      for (let i = 0; i < 6; i++) await put(bus, { project: 'bank', keys: ['k:busy'], createdMs: T0 + i });
      expect(await idsByKeys(bus, ['k:busy'], { perKeyLimit: 2, nowMs: T0 + 100 })).toEqual([mine.engram.id]);
    });

    it('leaves out expired engrams (expiresMs <= nowMs), removed engrams, and kinds not asked for', async () => {
      const short = await put(bus, { keys: ['k:x'], ttlMs: 5000 });
      const removed = await put(bus, { keys: ['k:x'] });
      const risk = await put(bus, { keys: ['k:x'], kind: 'risk' });
      await bus.removeEngram(removed.engram.id, 'admin', T0 + 1);
      expect(await idsByKeys(bus, ['k:x'], { nowMs: T0 + 4999 })).toEqual([short.engram.id, risk.engram.id].sort());
      expect(await idsByKeys(bus, ['k:x'], { nowMs: T0 + 5000 })).toEqual([risk.engram.id]);
      expect(await idsByKeys(bus, ['k:x'], { nowMs: T0 + 1, kinds: ['fact'] })).toEqual([short.engram.id]);
      expect(await idsByKeys(bus, ['k:x'], { nowMs: T0 + 1, kinds: ['risk', 'todo'] })).toEqual([risk.engram.id]);
    });
  });

  describe('listEngrams', () => {
    it('lists visible live engrams newest first, filtered by kind and writer, up to the limit', async () => {
      const a = await put(bus, { createdMs: T0 - 3000, createdBy: 'alice', kind: 'fact' });
      const b = await put(bus, { createdMs: T0 - 2000, createdBy: 'bob', kind: 'risk' });
      const c = await put(bus, { createdMs: T0 - 1000, createdBy: 'alice', kind: 'risk', scope: 'run', runId: 'run-1' });
      await put(bus, { createdMs: T0, createdBy: 'alice', scope: 'run', runId: 'run-2' });
      await put(bus, { createdMs: T0, project: 'bank' });
      const org = await put(bus, { createdMs: T0 - 500, project: 'bank', scope: 'org' });
      const base = { project: 'shop', runId: 'run-1', nowMs: T0 + 1, limit: 100 };
      const ids = async (over: object = {}) => (await bus.listEngrams({ ...base, ...over })).map((r) => r.engram.id);
      expect(await ids()).toEqual([org.engram.id, c.engram.id, b.engram.id, a.engram.id]);
      expect(await ids({ limit: 2 })).toEqual([org.engram.id, c.engram.id]);
      expect(await ids({ kinds: ['risk'] })).toEqual([c.engram.id, b.engram.id]);
      expect(await ids({ createdBy: ['alice'] })).toEqual([c.engram.id, a.engram.id]);
      expect(await ids({ scopes: ['org'] })).toEqual([org.engram.id]);
    });

    it('leaves out expired engrams unless asked, and removed engrams always', async () => {
      const expired = await put(bus, { ttlMs: 10 });
      const live = await put(bus, { createdMs: T0 - 1 });
      const removed = await put(bus, { createdMs: T0 - 2 });
      await bus.removeEngram(removed.engram.id, 'admin', T0 + 1);
      const base = { project: 'shop', runId: 'run-1', nowMs: T0 + 10, limit: 100 };
      expect((await bus.listEngrams(base)).map((r) => r.engram.id)).toEqual([live.engram.id]);
      expect((await bus.listEngrams({ ...base, includeExpired: true })).map((r) => r.engram.id)).toEqual([expired.engram.id, live.engram.id]);
    });

    it('rejects a negative limit (INVALID_INPUT naming limit)', async () => {
      const err = await bus.listEngrams({ project: 'shop', runId: 'r', nowMs: T0, limit: -1 }).catch((e: unknown) => e);
      expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe('limit');
    });
  });

  describe('removal and promotion', () => {
    it('records a removal once: true, then false; unknown ids are false', async () => {
      const row = await put(bus);
      expect(await bus.removeEngram(row.engram.id, 'admin', T0 + 5)).toBe(true);
      expect(await bus.removeEngram(row.engram.id, 'someone', T0 + 6)).toBe(false);
      expect(await bus.removeEngram('eg-missing', 'admin', T0 + 6)).toBe(false);
      expect(await bus.getEngram(row.engram.id)).toEqual({ ...row, removedMs: T0 + 5, removedBy: 'admin' });
    });

    it('a promotion changes what key queries and listings show, and records who and when', async () => {
      const row = await put(bus, { scope: 'run', runId: 'run-1', keys: ['k:p'] });
      const outsider = { project: 'bank', runId: 'run-7' };
      expect(await idsByKeys(bus, ['k:p'], outsider)).toEqual([]);
      expect(await bus.setEngramScope(row.engram.id, 'org', 'parent', T0 + 50)).toBe(true);
      expect(await idsByKeys(bus, ['k:p'], outsider)).toEqual([row.engram.id]);
      expect(await idsByKeys(bus, ['k:p'], { ...outsider, scopes: ['run', 'project'] })).toEqual([]);
      expect((await bus.listEngrams({ ...outsider, nowMs: T0 + 60, limit: 10 })).map((r) => r.engram.id)).toEqual([row.engram.id]);
      const stored = await bus.getEngram(row.engram.id);
      expect(stored?.engram.scope).toBe('org');
      expect(stored).toMatchObject({ scopeChangedBy: 'parent', scopeChangedMs: T0 + 50 });
    });

    it('does not promote a removed, expired or unknown engram, but removes an expired one', async () => {
      const removed = await put(bus);
      await bus.removeEngram(removed.engram.id, 'admin', T0 + 1);
      const short = await put(bus, { ttlMs: 100 });
      expect(await bus.setEngramScope(removed.engram.id, 'org', 'parent', T0 + 2)).toBe(false);
      expect(await bus.setEngramScope(short.engram.id, 'org', 'parent', T0 + 100)).toBe(false);
      expect(await bus.setEngramScope('eg-missing', 'org', 'parent', T0 + 2)).toBe(false);
      expect((await bus.getEngram(short.engram.id))?.engram.scope).toBe('project');
      // An expired engram can still be removed: listings with includeExpired show it until then.
      expect(await bus.removeEngram(short.engram.id, 'admin', T0 + 200)).toBe(true);
    });

    it('the database refuses to delete or rewrite an engram, its keys or a grant', async () => {
      const row = await put(bus, { keys: ['k:t'] });
      await bus.putGrant(grant('g-t'));
      const refused = [
        `DELETE FROM {t}engrams`,
        `UPDATE {t}engrams SET created_by = 'forged'`,
        `UPDATE {t}engrams SET expires_ms = expires_ms + 1`,
        `DELETE FROM {t}engram_keys`,
        `UPDATE {t}engram_keys SET project = 'bank'`,
        `DELETE FROM {t}grants`,
        `UPDATE {t}grants SET cap_tokens = 999999`,
      ];
      for (const sql of refused) {
        const err = await rawSql(harness.backend, sql).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, sql).toBeInstanceOf(Error);
        expect(String((err as Error).message), sql).toMatch(/engram/);
      }
      // After a removal, nothing changes any more: not the removal, not the scope.
      await bus.removeEngram(row.engram.id, 'admin', T0 + 1);
      for (const sql of [`UPDATE {t}engrams SET removed_by = 'other'`, `UPDATE {t}engrams SET scope = 'global'`]) {
        await expect(rawSql(harness.backend, sql), sql).rejects.toThrow(/engram/);
      }
      expect(await bus.getEngram(row.engram.id)).toEqual({ ...row, removedMs: T0 + 1, removedBy: 'admin' });
      expect(await bus.getGrant('g-t')).toEqual(grant('g-t'));
    });
  });

  describe('agent turns and deref budgets', () => {
    it("numbers each agent's turns from 1, and concurrent starts get distinct numbers; 0 before the first", async () => {
      expect(await bus.currentAgentTurn('a')).toBe(0);
      expect(await bus.beginAgentTurn('a')).toBe(1);
      expect(await bus.beginAgentTurn('a')).toBe(2);
      expect(await bus.beginAgentTurn('b')).toBe(1);
      expect(await bus.currentAgentTurn('a')).toBe(2);
      const parallel = await Promise.all(Array.from({ length: 10 }, () => bus.beginAgentTurn('c')));
      expect(parallel.sort((x, y) => x - y)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    });

    it('allows derefs of a kind up to maxCount, then refuses without changing the usage', async () => {
      const limits = { maxCount: 2, maxTokens: 1000 };
      expect(await bus.reserveDeref('a', 1, 'repo', 100, limits)).toEqual({ ok: true, usage: { counts: { repo: 1, artifact: 0, sam: 0, other: 0 }, tokens: 100 } });
      expect((await bus.reserveDeref('a', 1, 'repo', 100, limits)).ok).toBe(true);
      const third = await bus.reserveDeref('a', 1, 'repo', 100, limits);
      expect(third).toEqual({ ok: false, usage: { counts: { repo: 2, artifact: 0, sam: 0, other: 0 }, tokens: 200 } });
      // Other kinds, other turns and other agents count apart.
      expect((await bus.reserveDeref('a', 1, 'artifact', 100, limits)).usage).toEqual({ counts: { repo: 2, artifact: 1, sam: 0, other: 0 }, tokens: 300 });
      expect((await bus.reserveDeref('a', 2, 'repo', 100, limits)).ok).toBe(true);
      expect((await bus.reserveDeref('b', 1, 'repo', 100, limits)).ok).toBe(true);
      expect(await bus.derefUsage('a', 1)).toEqual({ counts: { repo: 2, artifact: 1, sam: 0, other: 0 }, tokens: 300 });
      expect(await bus.derefUsage('a', 9)).toEqual({ counts: { repo: 0, artifact: 0, sam: 0, other: 0 }, tokens: 0 });
    });

    it('refuses a deref that would take the turn past maxTokens, the first one included', async () => {
      const limits = { maxCount: 10, maxTokens: 500 };
      expect(await bus.reserveDeref('a', 1, 'sam', 600, limits)).toEqual({ ok: false, usage: { counts: { repo: 0, artifact: 0, sam: 0, other: 0 }, tokens: 0 } });
      expect((await bus.reserveDeref('a', 1, 'sam', 300, limits)).ok).toBe(true);
      expect((await bus.reserveDeref('a', 1, 'other', 200, limits)).usage.tokens).toBe(500);
      expect(await bus.reserveDeref('a', 1, 'repo', 1, limits)).toEqual({ ok: false, usage: { counts: { repo: 0, artifact: 0, sam: 1, other: 1 }, tokens: 500 } });
      expect((await bus.reserveDeref('a', 1, 'repo', 0, limits)).ok).toBe(true);
      expect((await bus.reserveDeref('a', 1, 'repo', 0, { maxCount: 0, maxTokens: 500 })).ok).toBe(false);
      expect((await bus.reserveDeref('a', 2, 'repo', 10, { maxCount: Number.POSITIVE_INFINITY, maxTokens: Number.POSITIVE_INFINITY })).ok).toBe(true);
    });

    it('gives back a failed deref whole, or the unused part of its tokens, never below zero', async () => {
      const limits = { maxCount: 1, maxTokens: 1000 };
      await bus.reserveDeref('a', 1, 'repo', 400, limits);
      await bus.releaseDeref('a', 1, 'repo', 0, 150);
      expect(await bus.derefUsage('a', 1)).toEqual({ counts: { repo: 1, artifact: 0, sam: 0, other: 0 }, tokens: 250 });
      expect((await bus.reserveDeref('a', 1, 'repo', 10, limits)).ok).toBe(false);
      await bus.releaseDeref('a', 1, 'repo', 1, 250);
      expect(await bus.derefUsage('a', 1)).toEqual({ counts: { repo: 0, artifact: 0, sam: 0, other: 0 }, tokens: 0 });
      expect((await bus.reserveDeref('a', 1, 'repo', 10, limits)).ok).toBe(true);
      await bus.releaseDeref('a', 1, 'artifact', 1, 5000);
      expect(await bus.derefUsage('a', 1)).toEqual({ counts: { repo: 1, artifact: 0, sam: 0, other: 0 }, tokens: 0 });
      // Nothing reserved in that turn: nothing to give back, and no error.
      await bus.releaseDeref('a', 7, 'repo', 1, 10);
      expect(await bus.derefUsage('a', 7)).toEqual({ counts: { repo: 0, artifact: 0, sam: 0, other: 0 }, tokens: 0 });
    });

    it('allows exactly maxCount of many concurrent reservations', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, () => bus.reserveDeref('a', 1, 'repo', 10, { maxCount: 3, maxTokens: 1000 })));
      expect(results.filter((r) => r.ok)).toHaveLength(3);
      expect(await bus.derefUsage('a', 1)).toEqual({ counts: { repo: 3, artifact: 0, sam: 0, other: 0 }, tokens: 30 });
    });

    it('allows exactly what fits maxTokens of many concurrent reservations', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, () => bus.reserveDeref('a', 1, 'artifact', 30, { maxCount: 100, maxTokens: 100 })));
      expect(results.filter((r) => r.ok)).toHaveLength(3);
      expect((await bus.derefUsage('a', 1)).tokens).toBe(90);
    });

    it('rejects an unknown deref kind or a negative token count (INVALID_INPUT)', async () => {
      const limits = { maxCount: 1, maxTokens: 1 };
      await expect(bus.reserveDeref('a', 1, 'repo; DROP TABLE grants' as 'repo', 1, limits)).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'kind' } });
      await expect(bus.reserveDeref('a', 1, 'repo', -1, limits)).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'tokens' } });
      await expect(bus.reserveDeref('a', 1, 'repo', 1, { maxCount: Number.NaN, maxTokens: 1 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'maxCount' } });
    });
  });

  describe('grants', () => {
    it('stores a grant and reads it back; an id taken is a CONFLICT', async () => {
      await bus.putGrant(grant('g-1'));
      expect(await bus.getGrant('g-1')).toEqual(grant('g-1'));
      expect(await bus.getGrant('g-missing')).toBeNull();
      await expect(bus.putGrant(grant('g-1', { capTokens: 1 }))).rejects.toMatchObject({ code: 'CONFLICT', data: { field: 'id' } });
    });

    it('is used once: true, then false (a replay); unknown grants are false', async () => {
      await bus.putGrant(grant('g-1'));
      expect(await bus.useGrant('g-1', 120, T0 + 5)).toBe(true);
      expect(await bus.useGrant('g-1', 10, T0 + 6)).toBe(false);
      expect(await bus.getGrant('g-1')).toEqual({ ...grant('g-1'), usedMs: T0 + 5, usedTokens: 120 });
      expect(await bus.useGrant('g-missing', 10, T0 + 6)).toBe(false);
    });

    it('lets exactly one of many concurrent uses succeed', async () => {
      await bus.putGrant(grant('g-race'));
      const used = await Promise.all(Array.from({ length: 10 }, (_, i) => bus.useGrant('g-race', i, T0 + i)));
      expect(used.filter(Boolean)).toHaveLength(1);
      const winner = used.indexOf(true);
      expect(await bus.getGrant('g-race')).toMatchObject({ usedTokens: winner, usedMs: T0 + winner });
    });
  });

  describe('secrets', () => {
    it('creates a 32-byte hex secret once and returns the same one after, also to concurrent callers', async () => {
      const first = await bus.getOrCreateSecret('grants');
      expect(first).toMatch(/^[0-9a-f]{64}$/);
      expect(await bus.getOrCreateSecret('grants')).toBe(first);
      const other = await Promise.all(Array.from({ length: 8 }, () => bus.getOrCreateSecret('other')));
      expect(new Set(other).size).toBe(1);
      expect(other[0]).not.toBe(first);
    });
  });

  describe('bus events', () => {
    it('keeps telemetry events and lists them oldest first, filtered', async () => {
      await bus.logBusEvents([
        { tsMs: T0 + 20, type: 'less.engram.query', agentId: 'b', data: { hits: 2 } },
        { tsMs: T0 + 10, type: 'less.engram.put', agentId: 'a', role: 'programmer', data: { id: 'eg-1', nested: { ok: true } } },
      ]);
      await bus.logBusEvents([]);
      await bus.logBusEvents([{ tsMs: T0 + 30, type: 'less.budget.reject', agentId: 'a', data: {} }]);
      await bus.logBusEvents([{ tsMs: T0 + 40, type: 'less.engram.put', data: { id: 'eg-2' } }]);

      const all = await bus.listBusEvents();
      expect(all.map((e) => e.tsMs)).toEqual([T0 + 10, T0 + 20, T0 + 30, T0 + 40]);
      expect(all[0]).toEqual({ id: all[0]!.id, tsMs: T0 + 10, type: 'less.engram.put', agentId: 'a', role: 'programmer', data: { id: 'eg-1', nested: { ok: true } } });
      expect(all[3]).toEqual({ id: all[3]!.id, tsMs: T0 + 40, type: 'less.engram.put', data: { id: 'eg-2' } });
      // Ids increase in write order.
      expect(all[1]!.id).toBeLessThan(all[0]!.id);
      expect((await bus.listBusEvents({ types: ['less.engram.put'] })).map((e) => e.data.id)).toEqual(['eg-1', 'eg-2']);
      expect((await bus.listBusEvents({ agentId: 'a' })).map((e) => e.type)).toEqual(['less.engram.put', 'less.budget.reject']);
      expect((await bus.listBusEvents({ sinceMs: T0 + 20 })).map((e) => e.tsMs)).toEqual([T0 + 20, T0 + 30, T0 + 40]);
      expect((await bus.listBusEvents({ limit: 2 })).map((e) => e.tsMs)).toEqual([T0 + 10, T0 + 20]);
      expect(await bus.listBusEvents({ types: ['less.engram.put'], agentId: 'b' })).toEqual([]);
    });
  });
});

// Two backends with two pools on one schema: what two Engram servers sharing a database look like. The limits
// must hold across them, not only within one process.
describe('bus storage: two PostgreSQL servers on one schema', () => {
  let schema: string;
  let a: PostgresBackend;
  let b: PostgresBackend;
  const either = (i: number): BusStorage => (i % 2 === 0 ? a.bus : b.bus);

  beforeEach(async () => {
    schema = uniqueSchema('engram_bus');
    [a, b] = await Promise.all([
      PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 }),
      PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 }),
    ]);
  });
  afterEach(async () => {
    await a?.close();
    await b?.close();
    await dropSchema(schema);
  });

  it('holds a deref budget exactly across servers', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => either(i).reserveDeref('agent', 1, 'repo', 10, { maxCount: 5, maxTokens: 1000 })));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect(await a.bus.derefUsage('agent', 1)).toEqual({ counts: { repo: 5, artifact: 0, sam: 0, other: 0 }, tokens: 50 });
  });

  it('lets one server use a grant once', async () => {
    await a.bus.putGrant(grant('g-x'));
    const used = await Promise.all(Array.from({ length: 20 }, (_, i) => either(i).useGrant('g-x', 1, T0 + i)));
    expect(used.filter(Boolean)).toHaveLength(1);
  });

  it("holds a writer's rate limit exactly across servers", async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => either(i).putEngram(engramRow({ createdBy: 'spammer', createdMs: T0 + i }), { maxPerAgentPerMinute: 5 })),
    );
    expect(outcomes.filter((o) => o.status === 'stored')).toHaveLength(5);
    expect(outcomes.filter((o) => o.status === 'rateLimited')).toHaveLength(15);
    const listed = await b.bus.listEngrams({ project: 'shop', runId: 'run-1', nowMs: T0 + 100, limit: 100, createdBy: ['spammer'] });
    expect(listed).toHaveLength(5);
  });

  it('stores one engram for a claim that several writers put at once on both servers', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) => either(i).putEngram(engramRow({ createdBy: `writer-${i}`, dedupeKey: 'same-claim', createdMs: T0 + i }), LIMITS)),
    );
    const stored = outcomes.filter((o) => o.status === 'stored');
    expect(stored).toHaveLength(1);
    const id = stored[0]!.status === 'stored' ? stored[0]!.row.engram.id : '';
    for (const o of outcomes) expect(o.status === 'rateLimited' ? null : o.row.engram.id).toBe(id);
  });

  it('hands both servers the same secret when they create it at once', async () => {
    const secrets = await Promise.all(Array.from({ length: 10 }, (_, i) => either(i).getOrCreateSecret('grant-signing')));
    expect(new Set(secrets).size).toBe(1);
  });
});
