import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { VectorSearchQuery } from '../../src/store/backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import type { VectorIndexOptions } from '../../src/store/sqlite/sqlite-vector-index.js';

const MODEL = { name: 'test-16d@1', dimensions: 16 };
const SESSIONS = ['s1', 's2', 's3'];

/** Seeded vectors in a few clusters (as real embeddings are), unit length. */
function vectors(count: number, seed: number): Float32Array[] {
  let a = seed;
  const rand = (): number => {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    return a / 4294967296;
  };
  const centres = Array.from({ length: 6 }, () => Float32Array.from({ length: 16 }, () => rand() - 0.5));
  return Array.from({ length: count }, (_, i) => normalize(Float32Array.from(centres[i % 6]!, (x) => x + (rand() - 0.5) * 0.6)));
}

describe('SQLite IVF vector index', () => {
  let dir: string;
  let path: string;
  const open: SqliteBackend[] = [];
  let ids: EventId[];
  let data: Float32Array[];

  const backend = (vectorIndex: VectorIndexOptions, readonly = false): SqliteBackend => {
    const b = SqliteBackend.open(path, { vectorIndex: { index: 'ivf', ...vectorIndex }, readonly });
    open.push(b);
    return b;
  };
  const ivfRows = (b: SqliteBackend): number => ((b as unknown as { db: { prepare(s: string): { get(): { n: number } } } }).db.prepare('SELECT count(*) AS n FROM vec_ivf').get()).n;
  const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 10, ...extra });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-ivf-'));
    path = join(dir, 'engram.db');
    const store = backend({ mode: 'exact' });
    const mem = await openEngram({ backend: store });
    await store.setVectorModel(MODEL);
    ids = [];
    for (const s of SESSIONS) {
      const out = await mem.append(
        s,
        Array.from({ length: 100 }, (_, i) => ({ kind: i % 2 ? ('note' as const) : ('user' as const), content: `event ${s} ${i}`, ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() })),
      );
      ids.push(...out.map((o) => o.record.id));
    }
    data = vectors(ids.length, 7);
    await store.putVectors(
      MODEL.name,
      ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
    );
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('probing every list answers exactly what exact search answers, filters included', async () => {
    const fast = backend({ minVectors: 0, probes: 1000 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    const filters = [{}, { sessionIds: ['s2' as SessionId] }, { kinds: ['note' as const] }, { fromMs: Date.UTC(2026, 0, 1) + 50_000 }];
    for (const q of vectors(8, 99)) {
      for (const filter of filters) {
        const exact = await fast.searchVectors(query(q, { filter, exact: true }));
        const got = await fast.searchVectors(query(q, { filter }));
        expect(got.map((h) => h.eventId)).toEqual(exact.map((h) => h.eventId));
        expect(got.map((h) => h.similarity)).toEqual(exact.map((h) => h.similarity));
      }
    }
    expect(ivfRows(fast)).toBe(ids.length);
  });

  it('probing a third of the lists finds nearly all exact neighbours of clustered vectors; exact mode builds nothing', async () => {
    const fast = backend({ minVectors: 0, lists: 6, probes: 2 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', lists: 6 });
    let found = 0;
    // Queries from the stored vectors' clusters (the same seed, past the stored ones).
    for (const q of vectors(ids.length + 20, 7).slice(ids.length)) {
      const exact = new Set((await fast.searchVectors(query(q, { exact: true }))).map((h) => h.eventId));
      found += (await fast.searchVectors(query(q))).filter((h) => exact.has(h.eventId)).length;
    }
    expect(found / 200).toBeGreaterThanOrEqual(0.9);
    expect(ivfRows(fast)).toBe(ids.length);
  });

  it('never builds the index in exact mode', async () => {
    const exactOnly = backend({ mode: 'exact', minVectors: 0 });
    expect(await exactOnly.maintainVectorIndex()).toMatchObject({ state: 'exact' });
    expect((await exactOnly.searchVectors(query(data[0]!))).length).toBe(10);
    expect(() => ivfRows(exactOnly)).toThrow(/no such table/);
  });

  it('stays exact below the size threshold (no index built)', async () => {
    const store = backend({ minVectors: 301 });
    expect(await store.maintainVectorIndex()).toMatchObject({ state: 'not-needed', vectors: ids.length });
    await store.searchVectors(query(data[0]!));
    expect(() => ivfRows(store)).toThrow(/no such table/);
  });

  it('a query never builds the index: it searches exactly until maintenance builds it', async () => {
    const fast = backend({ minVectors: 0, probes: 1 });
    const exact = await fast.searchVectors(query(data[2]!, { exact: true }));
    expect(await fast.searchVectors(query(data[2]!))).toEqual(exact);
    expect(() => ivfRows(fast)).toThrow(/no such table/);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built' });
    expect(ivfRows(fast)).toBe(ids.length);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'current', vectors: ids.length });
  });

  it('adds vectors stored after the build, and a purge removes them from the index', async () => {
    const fast = backend({ minVectors: 0, probes: 1000 });
    await fast.maintainVectorIndex();
    const mem = await openEngram({ backend: fast });
    const [late] = await mem.append('s4', [{ kind: 'note', content: 'late event' }]);
    const lateVector = normalize(Float32Array.from({ length: 16 }, (_, i) => (i === 3 ? 1 : 0.01)));
    await fast.putVectors(MODEL.name, [{ eventId: late!.record.id, vector: lateVector }]);
    expect(ivfRows(fast)).toBe(ids.length + 1);
    expect((await fast.searchVectors(query(lateVector, { limit: 1 })))[0]?.eventId).toBe(late!.record.id);

    const report = await mem.purge({ sessionId: 's4' }, { actor: 'os:test' });
    expect(report.counts.vectors).toBe(1);
    expect(ivfRows(fast)).toBe(ids.length);
    const after = await fast.searchVectors(query(lateVector, { limit: 300 }));
    expect(after.map((h) => h.eventId)).not.toContain(late!.record.id);
    expect(after.map((h) => h.eventId)).toEqual((await fast.searchVectors(query(lateVector, { limit: 300, exact: true }))).map((h) => h.eventId));
  });

  it('is rebuilt from the stored vectors when missing, and dropped with a model switch', async () => {
    const fast = backend({ minVectors: 0, probes: 1000 });
    await fast.maintainVectorIndex();
    const before = await fast.searchVectors(query(data[1]!));
    const db = (fast as unknown as { db: { exec(sql: string): void } }).db;
    db.exec('DROP TABLE vec_ivf');
    expect(() => ivfRows(fast)).toThrow(/no such table/);
    // A read-only connection does not build it: it answers exactly.
    const reader = backend({ minVectors: 0, probes: 1000 }, true);
    expect(await reader.searchVectors(query(data[1]!))).toEqual(before);
    expect(await reader.maintainVectorIndex()).toMatchObject({ state: 'readonly' });
    expect(() => ivfRows(fast)).toThrow(/no such table/);
    expect(await fast.searchVectors(query(data[1]!))).toEqual(before);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built' });
    expect(ivfRows(fast)).toBe(ids.length);
    expect(await fast.searchVectors(query(data[1]!))).toEqual(before);

    await fast.setVectorModel({ name: 'other-16d@1', dimensions: 16 });
    expect(() => ivfRows(fast)).toThrow(/no such table/);
  });
});
